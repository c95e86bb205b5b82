/**
 * `vigil verify --public-key / --trusted-keys` on captures written by a real `vigil wrap
 * --signing-key` session (verify.md "With keys", issue 14), against the compiled binary:
 *
 * - signed, with its key: closed and authenticated, the key id and what is covered in --json, the
 *   `signed by` line in the text; without a key: closed, "not authenticated";
 * - another key: unknown (key_untrusted); a changed byte: unknown (subject_mismatch);
 * - vigil SIGKILLed after signed checkpoints (no stop record): incomplete
 *   (stop_missing_checkpointed), and unknown without a key;
 * - a key file that is not a public key: usage error, 64.
 */
import { describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CAPTURE_POLICY, type VerifyJson, runVerify } from "../helpers/capture.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type TmpDir, tmpDir, waitUntil } from "../helpers/fixture.ts";
import { CAPTURE, VIGIL_BIN, type WrapSession, startWrap } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

const ENVELOPE = "capture.dsse.json";
const CHECKPOINTS = "checkpoints.ndjson";

function scratch(): TmpDir {
  const t = tmpDir("vigil-e2e-verify-signed");
  cleanups.add(() => t.cleanup());
  return t;
}

/** `vigil keygen --out PREFIX`; the key id it prints. */
function keygen(prefix: string): { key: string; pub: string; keyid: string } {
  const r = Bun.spawnSync([VIGIL_BIN, "keygen", "--out", prefix], { stdout: "pipe", stderr: "pipe", timeout: 15_000 });
  expect(r.exitCode).toBe(0);
  return { key: `${prefix}.key`, pub: `${prefix}.pub`, keyid: r.stdout.toString().trim() };
}

const verifyJson = (args: string[]) => {
  const r = runVerify([...args, "--json"]);
  return { code: r.code, stderr: r.stderr, doc: JSON.parse(r.stdout || "null") as VerifyJson | null };
};
const codesOf = (doc: VerifyJson | null) => [...new Set((doc?.reasons ?? []).map((r) => r.code))].sort();

/** A closed signed session: initialize, tools/list, an allowed and a denied call, client EOF. */
async function signedCapture(t: TmpDir, key: string): Promise<string> {
  const s = startWrap({ policy: CAPTURE_POLICY, flags: ["--signing-key", key, "--checkpoint-every", "2"] }, tmpDir("vigil-e2e"));
  await s.initialize();
  await s.request("tools/list");
  await s.call("echo", { text: "one" });
  await s.call("exec", { cmd: "rm -rf /" });
  expect((await s.finish()).code).toBe(0);
  const dir = join(t.path, "capture");
  cpSync(s.captureDir!, dir, { recursive: true });
  return dir;
}

describe("a signed capture", () => {
  test("with its key: closed and authenticated; without: closed and not authenticated; another key: key_untrusted", async () => {
    const t = scratch();
    const signing = keygen(join(t.path, "signing"));
    const other = keygen(join(t.path, "other"));
    const dir = await signedCapture(t, signing.key);
    expect(existsSync(join(dir, ENVELOPE))).toBe(true);

    const signed = verifyJson([dir, "--public-key", signing.pub]);
    expect({ code: signed.code, reasons: signed.doc?.reasons }).toEqual({ code: 0, reasons: [] });
    expect(signed.doc!.verdict).toBe("closed");
    const a = signed.doc!.authentication;
    expect(a.authenticated).toBe(true);
    expect(a.keyid).toBe(signing.keyid);
    expect(a.covered!.files).toEqual([CAPTURE.manifest, CHECKPOINTS, CAPTURE.decisions, CAPTURE.receipts, CAPTURE.serverStderr, CAPTURE.context, CAPTURE.stop]);
    expect(Object.keys(a.covered!.logs).sort()).toEqual([CAPTURE.decisions, CAPTURE.receipts]);
    expect(a.covered!.logs[CAPTURE.decisions]!.count).toBe(2);
    expect(a.covered!.checkpoints).toBeGreaterThan(0);
    const text = runVerify([dir, "--public-key", signing.pub]);
    expect(text.code).toBe(0);
    expect(text.stdout.split("\n")).toContain(`  signed by ${signing.keyid} — covers 7 files, decisions 2 records, receipts ${a.covered!.logs[CAPTURE.receipts]!.count}, ${a.covered!.checkpoints} checkpoint${a.covered!.checkpoints === 1 ? "" : "s"}`);

    const unkeyed = verifyJson([dir]);
    expect(unkeyed.code).toBe(0);
    expect(unkeyed.doc!.authentication).toEqual({ authenticated: false, keyid: null, covered: null });
    expect(runVerify([dir]).stdout.split("\n")).toContain("  not authenticated (no --public-key)");

    const untrusted = verifyJson([dir, "--public-key", other.pub]);
    expect(untrusted.code).toBe(2);
    expect(codesOf(untrusted.doc)).toEqual(["key_untrusted"]);

    // --trusted-keys: a directory of .pub files, the signer among them.
    const keys = join(t.path, "trusted");
    mkdirSync(keys);
    cpSync(other.pub, join(keys, "other.pub"));
    cpSync(signing.pub, join(keys, "signing.pub"));
    expect(verifyJson([dir, "--trusted-keys", keys]).code).toBe(0);
  });

  test("a changed byte of the decision log → unknown, subject_mismatch and manifest_file_changed", async () => {
    const t = scratch();
    const signing = keygen(join(t.path, "signing"));
    const dir = await signedCapture(t, signing.key);
    const path = join(dir, CAPTURE.decisions);
    const bytes = readFileSync(path);
    const at = bytes.indexOf("allowed") >= 0 ? bytes.indexOf("allowed") : bytes.indexOf('"tool"') + 2;
    bytes[at] = bytes[at] === 0x61 ? 0x62 : 0x61;
    writeFileSync(path, bytes);
    const r = verifyJson([dir, "--public-key", signing.pub]);
    expect(r.code).toBe(2);
    for (const code of ["manifest_file_changed", "subject_mismatch"]) expect(codesOf(r.doc)).toContain(code);
    expect(r.doc!.authentication.authenticated).toBe(false);
  });

  test("a key file that is not a public key → usage error (64), before the capture is read", async () => {
    const t = scratch();
    const signing = keygen(join(t.path, "signing"));
    writeFileSync(join(t.path, "bad.pub"), "not a key\n");
    const dir = join(t.path, "empty");
    mkdirSync(dir);
    for (const key of [join(t.path, "bad.pub"), signing.key, join(t.path, "missing.pub")]) {
      const r = runVerify([dir, "--public-key", key]);
      expect({ key, code: r.code }).toEqual({ key, code: 64 });
      expect(r.stdout).toBe("");
    }
  });
});

describe("a signed session that died (vigil SIGKILLed) after its checkpoints", () => {
  test("with the key: incomplete (stop_missing_checkpointed); without: unknown", async () => {
    const t = scratch();
    const signing = keygen(join(t.path, "signing"));
    const s: WrapSession = startWrap({ policy: CAPTURE_POLICY, flags: ["--signing-key", signing.key, "--checkpoint-every", "1"] }, tmpDir("vigil-e2e"));
    await s.initialize();
    await s.call("echo", { text: "one" });
    await s.call("exec", { cmd: "rm -rf /" });
    const checkpoints = join(s.captureDir!, CHECKPOINTS);
    // A checkpoint follows each record; at least the two decisions' are on disk once both answers are back.
    expect(await waitUntil(() => existsSync(checkpoints) && readFileSync(checkpoints, "utf8").split("\n").length > 2, 10_000)).toBe(true);
    process.kill(s.client.pid, "SIGKILL");
    await s.client.exited(10_000);
    const dir = join(t.path, "capture");
    cpSync(s.captureDir!, dir, { recursive: true });
    for (const name of [CAPTURE.stop, CAPTURE.manifest, ENVELOPE]) expect({ name, exists: existsSync(join(dir, name)) }).toEqual({ name, exists: false });

    const r = verifyJson([dir, "--public-key", signing.pub]);
    expect(r.code).toBe(1);
    expect(r.doc!.verdict).toBe("incomplete");
    expect(codesOf(r.doc)).toContain("stop_missing_checkpointed");
    for (const f of r.doc!.reasons) expect(["stop_missing_checkpointed", "not_covered"]).toContain(f.code);
    expect(r.doc!.reasons.find((f) => f.code === "stop_missing_checkpointed")!.message).toMatch(/covers decisions\.ndjson 2 of 2 records/);
    expect(r.doc!.authentication.authenticated).toBe(true);
    expect(r.doc!.authentication.covered!.files).toEqual([]);

    const unkeyed = verifyJson([dir]);
    expect(unkeyed.code).toBe(2);
    expect(codesOf(unkeyed.doc)).toContain("stop_missing");
  });
});
