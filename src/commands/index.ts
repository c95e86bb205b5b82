/** The one registry of subcommands, loaded lazily so `vigil --version` stays fast. */
export const commands = {
  wrap: () => import("./wrap.ts").then((m) => m.default),
  verify: () => import("./verify.ts").then((m) => m.default),
  policy: () => import("./policy.ts").then((m) => m.default),
  serve: () => import("./serve.ts").then((m) => m.default),
  keygen: () => import("./keygen.ts").then((m) => m.default),
};
