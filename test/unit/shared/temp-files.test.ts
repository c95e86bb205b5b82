/** Stale temp files of atomic writes are swept on open; nothing else is touched (issue 11 item 11). */
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { writeFileAtomic } from "../../../src/shared/durable/atomic-file.ts";
import { removeStaleTemps, tempPathFor, tempWriterPid } from "../../../src/shared/durable/temp-files.ts";
import { type TmpDir, tmpDir } from "../../helpers/fixture.ts";

let tmp: TmpDir;
afterEach(() => tmp?.cleanup());

test("tempWriterPid reads exactly the names tempPathFor makes, for that target only", () => {
  const name = basename(tempPathFor("/d/mcp-events.json", 4242, 7, "k3x9az"));
  expect(name).toBe(".mcp-events.json.tmp-4242-7-k3x9az");
  expect(tempWriterPid(name, "mcp-events.json")).toBe(4242);
  expect(tempWriterPid(".mcp-events.json.tmp-4242-7-", "mcp-events.json")).toBe(4242); // Math.random can give a short tail
  for (const other of [
    "mcp-events.json.tmp-4242-7-k3x9az", // no leading dot
    ".mcp-events.json.tmp-4242-7-k3x9az.bak",
    ".mcp-events.json.tmp-4242-7-K3X9AZ",
    ".mcp-events.json.tmp-abc-7-k3x9az",
    ".mcp-events.json.tmp-0-7-k3x9az",
    ".mcp-events.json.tmp-4242",
    ".mcp-events.jsonx.tmp-4242-7-k3x9az",
  ]) expect(tempWriterPid(other, "mcp-events.json")).toBeNull();
  expect(tempWriterPid(name, "mcp-events.log")).toBeNull();
});

test("removes the targets' temp files whose writer is gone; live writers, other names and directories stay", async () => {
  tmp = tmpDir("vigil-unit-temp-files");
  const dead = 999_991;
  const live = 999_992;
  const files = [
    `.mcp-events.json.tmp-${dead}-1-abc123`,
    `.mcp-events.log.tmp-${dead}-3-zz`,
    `.mcp-events.json.tmp-${live}-2-abc123`,
    `.other.json.tmp-${dead}-1-abc123`,
    "mcp-events.json",
    ".mcp-events.json.tmp-notours",
  ];
  for (const f of files) writeFileSync(tmp.file(f), "x");
  mkdirSync(tmp.file(`.mcp-events.json.tmp-${dead}-9-dir`));
  const swept = await removeStaleTemps(tmp.path, ["mcp-events.json", "mcp-events.log"], (pid) => pid === live);
  expect(swept.removed.sort()).toEqual([`.mcp-events.json.tmp-${dead}-1-abc123`, `.mcp-events.log.tmp-${dead}-3-zz`]);
  expect(swept.failed).toEqual([]);
  expect(readdirSync(tmp.path).sort()).toEqual(
    [`.mcp-events.json.tmp-${live}-2-abc123`, `.mcp-events.json.tmp-${dead}-9-dir`, `.other.json.tmp-${dead}-1-abc123`, "mcp-events.json", ".mcp-events.json.tmp-notours"].sort(),
  );
});

test("a missing directory has nothing to sweep; this process's own temp files are never taken for stale", async () => {
  tmp = tmpDir("vigil-unit-temp-files");
  expect(await removeStaleTemps(tmp.file("absent"), ["a.json"])).toEqual({ removed: [], failed: [] });
  writeFileSync(tmp.file(`.a.json.tmp-${process.pid}-1-abc`), "in flight");
  await writeFileAtomic(tmp.file("a.json"), "{}");
  expect((await removeStaleTemps(tmp.path, ["a.json"])).removed).toEqual([]);
  expect(readdirSync(tmp.path).sort()).toEqual([`.a.json.tmp-${process.pid}-1-abc`, "a.json"]);
});
