import { afterAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256OfLines } from "../../../src/shared/digest.ts";

const dir = mkdtempSync(join(tmpdir(), "vigil-digest-lines-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sha = (text: string) => createHash("sha256").update(text).digest("hex");

test("the first N lines of a file, or all its complete lines (a torn last line left out); null when missing", () => {
  const path = join(dir, "log.ndjson");
  writeFileSync(path, "a\nbb\nccc\ntorn");
  expect(sha256OfLines(path)).toEqual({ sha256: sha("a\nbb\nccc\n"), lines: 3 });
  expect(sha256OfLines(path, 2)).toEqual({ sha256: sha("a\nbb\n"), lines: 2 });
  expect(sha256OfLines(path, 0)).toEqual({ sha256: sha(""), lines: 0 });
  expect(sha256OfLines(join(dir, "absent"))).toBeNull();
});

test("lines that span the 1 MiB read pieces are hashed whole", () => {
  const path = join(dir, "big.ndjson");
  const long = "x".repeat((1 << 20) + 17);
  writeFileSync(path, `${long}\nshort\n${long}`);
  expect(sha256OfLines(path)).toEqual({ sha256: sha(`${long}\nshort\n`), lines: 2 });
  expect(sha256OfLines(path, 1)).toEqual({ sha256: sha(`${long}\n`), lines: 1 });
});
