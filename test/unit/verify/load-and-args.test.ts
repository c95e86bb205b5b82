/** The I/O half (loadCapture) and the argument parser of `vigil verify`. */
import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { VigilError } from "../../../src/shared/errors.ts";
import { loadCapture } from "../../../src/verify/load-capture.ts";
import { parseVerifyArgs, runVerify } from "../../../src/verify/run.ts";
import { verifyCapture } from "../../../src/verify/verify-capture.ts";
import { CAPTURE, type CaptureCopy, copyCapture, goldenDir } from "../../helpers/capture.ts";
import { goldenInput } from "./golden-input.ts";

let copy: CaptureCopy | undefined;
afterEach(() => {
  copy?.cleanup();
  copy = undefined;
});

describe("loadCapture", () => {
  test("a golden capture loads as the in-memory golden input, and verifies closed", () => {
    const loaded = loadCapture(goldenDir("clean"));
    const expected = goldenInput("clean");
    for (const name of Object.values(CAPTURE)) {
      const a = loaded.files[name];
      const b = expected.files[name];
      expect(a.kind).toBe(b.kind);
      if (a.kind !== "problem" && b.kind !== "problem") expect(a.sha256).toBe(b.sha256);
    }
    expect(loaded.files[CAPTURE.serverStderr].kind).toBe("hashed");
    expect(loaded.strayEntries).toEqual([]);
    expect(verifyCapture(loaded, { requireReceipts: false }).verdict).toBe("closed");
  });

  test("stray entries are collected, at most 20", () => {
    copy = copyCapture(goldenDir("clean"));
    for (let i = 0; i < 50; i++) writeFileSync(join(copy.dir, `stray-${i}`), "");
    const loaded = loadCapture(copy.dir);
    expect(loaded.strayEntries).toHaveLength(20);
    expect(verifyCapture(loaded, { requireReceipts: false }).reasons.length).toBe(20);
  });
});

describe("parseVerifyArgs", () => {
  const usage = (args: string[]) => {
    try {
      parseVerifyArgs(args);
    } catch (e) {
      expect(e).toBeInstanceOf(VigilError);
      return (e as VigilError).exitCode;
    }
    return "no error";
  };

  test("flags in any order", () => {
    expect(parseVerifyArgs(["--json", "d", "--require-receipts"])).toEqual({ dir: "d", json: true, requireReceipts: true });
    expect(parseVerifyArgs(["d"])).toEqual({ dir: "d", json: false, requireReceipts: false });
  });

  test("unknown flag, no dir, two dirs → usage (64)", () => {
    expect(usage(["d", "--bogus"])).toBe(64);
    expect(usage(["-x", "d"])).toBe(64);
    expect(usage([])).toBe(64);
    expect(usage(["a", "b"])).toBe(64);
    expect(usage(["d", "--json=1"])).toBe(64);
  });

  test("runVerify refuses a missing CAPTURE_DIR or a file with 64 before reading anything", () => {
    copy = copyCapture(goldenDir("clean"));
    const code = (dir: string) => {
      try {
        runVerify({ dir, json: true, requireReceipts: false });
      } catch (e) {
        return (e as VigilError).exitCode;
      }
      return "no error";
    };
    expect(code(join(copy.root, "nope"))).toBe(64);
    expect(code(join(copy.dir, CAPTURE.manifest))).toBe(64);
  });
});
