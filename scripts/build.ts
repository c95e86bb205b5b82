/**
 * Compiles vigil into one self-contained executable: `bun scripts/build.ts --host` → dist/vigil.
 * The version and commit are baked in; the binary never autoloads .env or bunfig.toml from the
 * operator's working directory (an evidence tool must behave the same wherever it runs), and the
 * test-only fault seam is compiled out (VIGIL_RELEASE).
 */
import { mkdirSync } from "node:fs";
import pkg from "../package.json" with { type: "json" };

function fail(message: string): never {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

const args = process.argv.slice(2);
for (const a of args) if (a !== "--host") fail(`unknown flag ${a} (supported: --host)`);

const commit = (() => {
  const r = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { stderr: "ignore" });
  return r.exitCode === 0 ? r.stdout.toString().trim() : "unknown";
})();

mkdirSync("dist", { recursive: true });
const result = await Bun.build({
  entrypoints: ["src/cli.ts"],
  minify: true,
  sourcemap: "none",
  define: {
    VIGIL_VERSION: JSON.stringify(pkg.version),
    VIGIL_COMMIT: JSON.stringify(commit),
    VIGIL_RELEASE: "true",
  },
  compile: { outfile: "dist/vigil", autoloadDotenv: false, autoloadBunfig: false },
});
if (!result.success) fail(result.logs.map(String).join("\n"));
process.stderr.write(`build: dist/vigil ${pkg.version} (${commit})\n`);
