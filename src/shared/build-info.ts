// Replaced at compile time by scripts/build.ts (--define); the fallbacks serve `bun src/cli.ts`.
declare const VIGIL_VERSION: string | undefined;
declare const VIGIL_COMMIT: string | undefined;

export const VERSION: string = typeof VIGIL_VERSION === "string" ? VIGIL_VERSION : "0.0.0-dev";
export const COMMIT: string = typeof VIGIL_COMMIT === "string" ? VIGIL_COMMIT : "unknown";
