/** Atomic snapshot writes and bounded small-file reads (serve.md §3 snapshot rule). */
import { afterEach, describe, expect, test } from "bun:test";
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { type AtomicWriteStage, readSmallFile, stageFileAtomic, writeFileAtomic } from "../../../src/shared/durable/atomic-file.ts";
import { StateError } from "../../../src/shared/durable/state-error.ts";
import { type TmpDir, tmpDir } from "../../helpers/fixture.ts";

let tmp: TmpDir;
afterEach(() => tmp?.cleanup());
const setup = () => (tmp = tmpDir("vigil-unit-state-atomic"));

describe("writeFileAtomic", () => {
  test("creates a 0600 file, replaces it, leaves no temp file", async () => {
    const t = setup();
    const path = t.file("mcp-events.json");
    await writeFileAtomic(path, '{"v":1}\n');
    expect(readFileSync(path, "utf8")).toBe('{"v":1}\n');
    expect(lstatSync(path).mode & 0o777).toBe(0o600);
    await writeFileAtomic(path, new Uint8Array(Buffer.from('{"v":2}\n')));
    expect(readFileSync(path, "utf8")).toBe('{"v":2}\n');
    expect(readdirSync(t.path)).toEqual(["mcp-events.json"]);
  });

  for (const stage of ["after_write", "before_rename"] as AtomicWriteStage[]) {
    test(`a failure ${stage.replace("_", " ")} keeps the old content and removes the temp file`, async () => {
      const t = setup();
      const path = t.file("snap.json");
      await writeFileAtomic(path, "old");
      const fault = (s: AtomicWriteStage) => {
        if (s === stage) throw Object.assign(new Error("EIO: injected"), { code: "EIO" });
      };
      await expect(writeFileAtomic(path, "new content", { fault })).rejects.toThrow("injected");
      expect(readFileSync(path, "utf8")).toBe("old");
      expect(readdirSync(t.path)).toEqual(["snap.json"]);
    });
  }

  test("a failure before the first snapshot leaves no file at all", async () => {
    const t = setup();
    const fault = (s: AtomicWriteStage) => {
      if (s === "before_rename") throw new Error("injected");
    };
    await expect(writeFileAtomic(t.file("snap.json"), "x", { fault })).rejects.toThrow("injected");
    expect(readdirSync(t.path)).toEqual([]);
  });

  test("a missing directory rejects with the system error", async () => {
    const t = setup();
    await expect(writeFileAtomic(t.file("nope/snap.json"), "x")).rejects.toMatchObject({ code: "ENOENT" });
  });

  test("concurrent writers: the file ends up as one whole version, no temp files", async () => {
    const t = setup();
    const path = t.file("snap.json");
    const versions = Array.from({ length: 20 }, (_, i) => JSON.stringify({ v: i, pad: "p".repeat(5000 + i) }));
    await Promise.all(versions.map((v) => writeFileAtomic(path, v)));
    expect(versions).toContain(readFileSync(path, "utf8"));
    expect(readdirSync(t.path)).toEqual(["snap.json"]);
  });

  test("a symlink at the target is replaced, not followed", async () => {
    const t = setup();
    writeFileSync(t.file("victim"), "victim");
    symlinkSync(t.file("victim"), t.file("snap.json"));
    await writeFileAtomic(t.file("snap.json"), "mine");
    expect(readFileSync(t.file("victim"), "utf8")).toBe("victim");
    expect(lstatSync(t.file("snap.json")).isSymbolicLink()).toBe(false);
    expect(readFileSync(t.file("snap.json"), "utf8")).toBe("mine");
  });
});

describe("stageFileAtomic", () => {
  test("the staged content takes effect only on install; until then the old content is what a reader sees", async () => {
    const t = setup();
    const path = t.file("snap.json");
    await writeFileAtomic(path, "old");
    const staged = await stageFileAtomic(path, "new");
    expect(readFileSync(path, "utf8")).toBe("old");
    expect(readdirSync(t.path).length).toBe(2); // the target and its synced temp
    await staged.install();
    expect(readFileSync(path, "utf8")).toBe("new");
    expect(lstatSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(t.path)).toEqual(["snap.json"]);
    await expect(staged.install()).rejects.toThrow("already installed or discarded");
  });

  test("discard removes the temp and keeps the old content; install after it refuses", async () => {
    const t = setup();
    const path = t.file("snap.json");
    await writeFileAtomic(path, "old");
    const staged = await stageFileAtomic(path, "abandoned");
    staged.discard();
    staged.discard(); // idempotent
    expect(readdirSync(t.path)).toEqual(["snap.json"]);
    expect(readFileSync(path, "utf8")).toBe("old");
    await expect(staged.install()).rejects.toThrow("already installed or discarded");
    expect(readFileSync(path, "utf8")).toBe("old");
  });

  test("a failed rename at install removes the temp and keeps the old content", async () => {
    const t = setup();
    const path = t.file("snap.json");
    await writeFileAtomic(path, "old");
    const fault = (s: AtomicWriteStage) => {
      if (s === "before_rename") throw Object.assign(new Error("EIO: injected"), { code: "EIO" });
    };
    const staged = await stageFileAtomic(path, "new", { fault });
    await expect(staged.install()).rejects.toThrow("injected");
    expect(readFileSync(path, "utf8")).toBe("old");
    expect(readdirSync(t.path)).toEqual(["snap.json"]);
  });
});

describe("readSmallFile", () => {
  test("missing → null; present → bytes; over the bound, symlink or directory → file_unreadable", async () => {
    const t = setup();
    expect(readSmallFile(t.file("missing"), 10)).toBeNull();
    await writeFileAtomic(t.file("ok"), "0123456789");
    expect(readSmallFile(t.file("ok"), 10)?.toString()).toBe("0123456789");
    symlinkSync(t.file("ok"), t.file("link"));
    mkdirSync(t.file("dir"));
    for (const [name, max] of [["ok", 9], ["link", 100], ["dir", 100]] as const) {
      let caught: unknown;
      try {
        readSmallFile(t.file(name), max);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(StateError);
      expect((caught as StateError).reason).toBe("file_unreadable");
    }
  });
});
