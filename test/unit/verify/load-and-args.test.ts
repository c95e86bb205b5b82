/** The I/O half (loadCapture) and the argument parser of `vigil verify`. */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateKeyPair } from "../../../src/evidence/keys.ts";
import { VigilError } from "../../../src/shared/errors.ts";
import { loadCapture } from "../../../src/verify/load-capture.ts";
import { evidenceDirKind, loadVerifyKeys, parseVerifyArgs, runVerify } from "../../../src/verify/run.ts";
import { verifyCapture } from "../../../src/verify/verify-capture.ts";
import { CAPTURE, type CaptureCopy, copyCapture, goldenDir } from "../../helpers/capture.ts";
import { tmpDir } from "../../helpers/fixture.ts";
import { F, STDERR, V2Capture, testKey } from "./capture-v2-builder.ts";
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
    expect(parseVerifyArgs(["--json", "d", "--require-receipts"])).toEqual({ dir: "d", json: true, requireReceipts: true, publicKeys: [], trustedKeys: null });
    expect(parseVerifyArgs(["d"])).toEqual({ dir: "d", json: false, requireReceipts: false, publicKeys: [], trustedKeys: null });
  });

  test("--public-key is repeatable (kept in order); --trusted-keys once", () => {
    expect(parseVerifyArgs(["--public-key", "a.pub", "d", "--public-key=b.pub", "--trusted-keys", "keys"])).toEqual({
      dir: "d",
      json: false,
      requireReceipts: false,
      publicKeys: ["a.pub", "b.pub"],
      trustedKeys: "keys",
    });
    expect(usage(["d", "--public-key"])).toBe(64);
    expect(usage(["d", "--trusted-keys", "a", "--trusted-keys", "b"])).toBe(64);
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
        runVerify({ dir, json: true, requireReceipts: false, publicKeys: [], trustedKeys: null });
      } catch (e) {
        return (e as VigilError).exitCode;
      }
      return "no error";
    };
    expect(code(join(copy.root, "nope"))).toBe(64);
    expect(code(join(copy.dir, CAPTURE.manifest))).toBe(64);
  });
});

describe("keys and directories", () => {
  const usageExit = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(VigilError);
      return { exit: (e as VigilError).exitCode, message: (e as VigilError).message };
    }
    return { exit: "no error", message: "" };
  };

  test("a key that cannot be loaded is a usage error (64) naming the file, never its contents", () => {
    using t = tmpDir("vigil-verify-keys");
    writeFileSync(t.file("bad.pub"), "secret-looking garbage\n");
    mkdirSync(t.file("empty"));
    const bad = usageExit(() => loadVerifyKeys({ publicKeys: [t.file("bad.pub")], trustedKeys: null }));
    expect(bad.exit).toBe(64);
    expect(bad.message).toContain("bad.pub");
    expect(bad.message).not.toContain("garbage");
    expect(usageExit(() => loadVerifyKeys({ publicKeys: [t.file("nope.pub")], trustedKeys: null })).exit).toBe(64);
    expect(usageExit(() => loadVerifyKeys({ publicKeys: [], trustedKeys: t.file("empty") })).exit).toBe(64);
    expect(usageExit(() => loadVerifyKeys({ publicKeys: [], trustedKeys: t.file("nope") })).exit).toBe(64);
    // A private key given as a public key is refused too.
    const pair = generateKeyPair(t.file("k"));
    expect(usageExit(() => loadVerifyKeys({ publicKeys: [pair.keyPath], trustedKeys: null })).exit).toBe(64);
  });

  test("--public-key and --trusted-keys together: each key once", () => {
    using t = tmpDir("vigil-verify-keys");
    mkdirSync(t.file("keys"));
    const a = generateKeyPair(join(t.path, "keys", "a"));
    const b = generateKeyPair(join(t.path, "keys", "b"));
    const keys = loadVerifyKeys({ publicKeys: [a.pubPath, a.pubPath], trustedKeys: t.file("keys") });
    expect(keys.map((k) => k.keyid).sort()).toEqual([a.keyid, b.keyid].sort());
  });

  test("a signed v2 capture on disk: its envelope and checkpoints are capture files, not strays; closed and authenticated", () => {
    using t = tmpDir("vigil-verify-v2");
    const key = testKey();
    const input = new V2Capture({ signer: key.signer }).close();
    for (const [name, state] of Object.entries(input.files)) {
      if (state.kind === "read") writeFileSync(join(t.path, name), state.bytes);
    }
    writeFileSync(join(t.path, F.serverStderr), STDERR);
    const loaded = loadCapture(t.path);
    expect(loaded.strayEntries).toEqual([]);
    const r = verifyCapture(loaded, { requireReceipts: false, trusted: [key.trusted] });
    expect(r.reasons).toEqual([]);
    expect(r.authentication.authenticated).toBe(true);
    expect(evidenceDirKind(t.path)).toBe("capture");
  });

  test("a directory with an event ledger and no capture file is a serve session directory; any capture file makes it a capture", () => {
    using t = tmpDir("vigil-verify-kind");
    expect(evidenceDirKind(t.path)).toBe("capture");
    writeFileSync(t.file("events.ndjson"), "");
    expect(evidenceDirKind(t.path)).toBe("session");
    // A wrap session that died early still has its server's stderr (created when the server is spawned).
    writeFileSync(t.file("server-stderr.log"), "");
    expect(evidenceDirKind(t.path)).toBe("capture");
  });
});
