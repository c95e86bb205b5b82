/** Reading capture files without trusting them: regular files only, hard byte limits (verify.md). */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { hashBounded, readBounded } from "../../../src/shared/durable/bounded-file.ts";
import { type TmpDir, tmpDir } from "../../helpers/fixture.ts";
import { sha256Hex } from "../../helpers/capture.ts";

let tmp: TmpDir;
afterEach(() => tmp?.cleanup());

function setup() {
  tmp = tmpDir("vigil-unit-bounded");
  return tmp;
}

describe("readBounded", () => {
  test("a file of exactly the limit is read; one byte more is too_large", () => {
    const t = setup();
    writeFileSync(t.file("at"), Buffer.alloc(100, 0x61));
    writeFileSync(t.file("over"), Buffer.alloc(101, 0x61));
    const at = readBounded(t.file("at"), 100);
    expect(at.ok).toBe(true);
    if (at.ok) expect(at.bytes.length).toBe(100);
    expect(readBounded(t.file("over"), 100)).toMatchObject({ ok: false, problem: "too_large" });
  });

  test("missing, symlink, directory, FIFO", () => {
    const t = setup();
    writeFileSync(t.file("real"), "x");
    symlinkSync(t.file("real"), t.file("link"));
    mkdirSync(t.file("dir"));
    expect(Bun.spawnSync(["mkfifo", t.file("fifo")]).exitCode).toBe(0);
    expect(readBounded(t.file("nope"), 10)).toMatchObject({ ok: false, problem: "missing" });
    expect(readBounded(t.file("link"), 10)).toMatchObject({ ok: false, problem: "not_regular" });
    expect(readBounded(t.file("dir"), 10)).toMatchObject({ ok: false, problem: "not_regular" });
    expect(readBounded(t.file("fifo"), 10)).toMatchObject({ ok: false, problem: "not_regular" });
  });

  test("an empty file is read as zero bytes", () => {
    const t = setup();
    writeFileSync(t.file("empty"), "");
    const r = readBounded(t.file("empty"), 10);
    expect(r.ok && r.bytes.length).toBe(0);
  });
});

describe("hashBounded", () => {
  test("size and SHA-256 of a file streamed in pieces (over 1 MiB)", () => {
    const t = setup();
    const data = Buffer.alloc(3 * 1024 * 1024 + 17, 0x62);
    writeFileSync(t.file("big"), data);
    expect(hashBounded(t.file("big"), 4 * 1024 * 1024)).toEqual({ ok: true, bytes: data.length, sha256: sha256Hex(data) });
    expect(hashBounded(t.file("big"), 1024 * 1024)).toMatchObject({ ok: false, problem: "too_large" });
  });

  test("refuses links and non-files like readBounded", () => {
    const t = setup();
    writeFileSync(t.file("real"), "x");
    symlinkSync(t.file("real"), t.file("link"));
    expect(hashBounded(t.file("link"), 10)).toMatchObject({ ok: false, problem: "not_regular" });
    expect(hashBounded(t.file("nope"), 10)).toMatchObject({ ok: false, problem: "missing" });
    expect(hashBounded(t.path, 10)).toMatchObject({ ok: false, problem: "not_regular" });
  });
});
