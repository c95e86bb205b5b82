// The layer gate (scripts/check-layers.ts), run as CI runs it, on small fake trees checked against
// the repo's own rules (scripts/layers.json): one violation of each kind, each reported on its line.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../../..");
const SCRIPT = join(REPO, "scripts/check-layers.ts");
const RULES = join(REPO, "scripts/layers.json");
const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "vigil-layers-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function gate(root: string, rules = RULES): { status: number; out: string[]; err: string } {
  const r = Bun.spawnSync([process.execPath, SCRIPT, "--rules", rules, "--root", root], { stdout: "pipe", stderr: "pipe" });
  return { status: r.exitCode, out: r.stdout.toString().trim().split("\n"), err: r.stderr.toString() };
}

const CLEAN = {
  "cli.ts": 'import { main } from "./main.ts";\nmain;\n',
  "main.ts": 'import { wrap } from "./commands/wrap.ts";\nexport const main = wrap;\n',
  "commands/wrap.ts": 'import { run } from "../wrap/run.ts";\nexport const wrap = run;\n',
  "wrap/run.ts": 'import { log } from "../shared/log.ts";\nimport { lines } from "../shared/ndjson/lines.ts";\nexport const run = [log, lines];\n',
  "shared/log.ts": "export const log = 1;\n",
  "shared/ndjson/lines.ts": 'import * as v from "valibot";\nexport const lines = v;\n',
  "mcp/pool.ts": 'import { log } from "../shared/log.ts";\n// import { run } from "../wrap/run.ts";  (a comment is not an import)\nconst s = "import x from \'../serve/app.ts\'";\nexport const pool = [log, s];\n',
};

describe("check-layers", () => {
  test("a tree that keeps the rules passes, with a summary line; comments and strings are not imports", () => {
    const r = gate(tree(CLEAN));
    expect(r.status).toBe(0);
    expect(r.out.at(-1)).toContain("check-layers: 7 files, no violation");
  });

  test("a deliberately added import of wrap/ in mcp/ fails with FILE:LINE imports TARGET (rule)", () => {
    const root = tree({ ...CLEAN, "mcp/pool.ts": 'import { log } from "../shared/log.ts";\nimport { run } from "../wrap/run.ts";\nexport const pool = [log, run];\n' });
    const r = gate(root);
    expect(r.status).toBe(1);
    expect(r.out).toEqual(["src/mcp/pool.ts:2 imports src/wrap/run.ts (mcp may import only mcp, shared; not wrap)"]);
  });

  test("dynamic imports, export-from and import type count too", () => {
    const root = tree({
      ...CLEAN,
      "shared/log.ts": 'export { run } from "../wrap/run.ts";\nexport const log = 1;\n',
      "policy/eval.ts": 'import type { Pool } from "../mcp/pool.ts";\nexport async function load() {\n  return import("../serve/app.ts");\n}\nexport type P = Pool;\n',
      "serve/app.ts": 'import { run } from "../wrap/run.ts";\nexport const app = run;\n',
    });
    const r = gate(root);
    expect(r.status).toBe(1);
    expect(r.out).toContain("src/shared/log.ts:1 imports src/wrap/run.ts (shared may import only shared; not wrap)");
    expect(r.out).toContain("src/policy/eval.ts:1 imports src/mcp/pool.ts (policy may import only policy, shared; not mcp)");
    expect(r.out).toContain("src/policy/eval.ts:3 imports src/serve/app.ts (policy may import only policy, shared; not serve)");
    expect(r.out).toContain("src/serve/app.ts:1 imports src/wrap/run.ts (serve may import only serve, events, mcp, policy, evidence, shared; not wrap)");
  });

  test("an import circle is printed as the cycle, even inside one part", () => {
    const root = tree({
      ...CLEAN,
      "events/hub.ts": 'import { commands } from "./commands.ts";\nexport const hub = commands;\n',
      "events/commands.ts": 'import type { hub } from "./hub.ts";\nexport const commands: typeof hub | 1 = 1;\n',
    });
    const r = gate(root);
    expect(r.status).toBe(1);
    expect(r.out).toEqual(["circle: src/events/commands.ts -> src/events/hub.ts -> src/events/commands.ts"]);
  });

  test("an oversize file, a file in no part and an import of a missing file are each reported", () => {
    const root = tree({
      ...CLEAN,
      "verify/big.ts": "export const x = 1;\n".repeat(401),
      "stray/thing.ts": "export const y = 1;\n",
      "wrap/run.ts": 'import { log } from "../shared/log.ts";\nimport { gone } from "../shared/gone.ts";\nexport const run = [log, gone];\n',
    });
    const r = gate(root);
    expect(r.status).toBe(1);
    expect(r.out).toContain("src/verify/big.ts: 401 lines (limit 400)");
    expect(r.out).toContain("src/stray/thing.ts: in no part of the layer rules");
    expect(r.out).toContain("src/wrap/run.ts:2 imports shared/gone.ts (not a .ts file under src/)");
  });

  test("an unusable rules file is refused with exit 2", () => {
    const rules = join(tree({ "x.ts": "" }), "rules.json");
    writeFileSync(rules, JSON.stringify({ root: "src", maxLines: 400, parts: [{ name: "a", files: ["**"], mayImport: [], extra: 1 }] }));
    const r = gate(dirname(rules), rules);
    expect(r.status).toBe(2);
    expect(r.err).toContain("rules.json");
  });

  test("the repository's own src/ keeps the rules", () => {
    const r = Bun.spawnSync([process.execPath, SCRIPT], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
    expect(r.stdout.toString()).not.toContain(" imports ");
    expect(r.exitCode).toBe(0);
  });
});
