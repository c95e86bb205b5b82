/**
 * What an operator reads when a key or an evidence directory is handed over wrongly (issue 14,
 * README "Signed evidence", "Verifying with keys"), against the compiled binary: each refusal is
 * one line on stderr that says what is wrong and what to give instead, with the documented exit
 * (wrap 2, verify 64), and nothing is started.
 *
 * - wrap --signing-key given the .pub (0644 or 0600), a key of another type; a symbolic link is followed;
 * - verify --public-key / --trusted-keys naming nothing: "no such file" / "no such directory",
 *   without the usage hint (the arguments were well formed);
 * - keygen over an existing file says how to go on;
 * - verify with the wrong key names the key that signed and the keys that were trusted;
 * - a serve session directory copied under another name names both names; one record is "1 record";
 * - `vigil --help` and `vigil verify --help` say that verify also reads serve session directories.
 */
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { chmodSync, cpSync, existsSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GOLDEN_ROOT, runVerify } from "../helpers/capture.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type TmpDir, tmpDir } from "../helpers/fixture.ts";
import { EVENT_SOURCE, REPO_ROOT, VIGIL_BIN, runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

const SIGNED_CAPTURE = join(GOLDEN_ROOT, "../captures-v2-signed/clean");
const SIGNED_SESSION = join(REPO_ROOT, "test/fixtures/sessions-signed/inbox");
const GOLDEN_PUB = join(REPO_ROOT, "test/fixtures/keys/golden.pub");

function scratch(): TmpDir {
  const t = tmpDir("vigil-e2e-operator");
  cleanups.add(() => t.cleanup());
  return t;
}

/** `vigil keygen --out PREFIX` (the binary under test): the pair's paths and key id. */
async function keygen(prefix: string): Promise<{ key: string; pub: string; keyid: string }> {
  const run = await runVigil(["keygen", "--out", prefix]);
  expect(run.code).toBe(0);
  return { key: `${prefix}.key`, pub: `${prefix}.pub`, keyid: run.stdout.trim() };
}

/** wrap with `--signing-key key`, refused: exit 2, one stderr line (returned), nothing spawned or created. */
async function wrapRefused(key: string): Promise<string> {
  const tmp = scratch();
  const marker = tmp.file("spawned");
  const capture = tmp.file("capture");
  const run = await runVigil([
    "wrap", "--allow-all", "--capture-dir", capture, "--event-source", EVENT_SOURCE, "--signing-key", key,
    "--", "/bin/sh", "-c", `: > ${marker}`,
  ]);
  expect({ code: run.code, stdout: run.stdout, spawned: existsSync(marker), capture: existsSync(capture) }).toEqual({ code: 2, stdout: "", spawned: false, capture: false });
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe("wrap --signing-key given the wrong file", () => {
  test("the public key (as keygen wrote it, 0644, and chmod 600): named as a public key, not a mode problem", async () => {
    const tmp = scratch();
    const k = await keygen(tmp.file("ops"));
    const hint = "a public key; give its private key (PREFIX.key from vigil keygen) — the .pub is for verify --public-key";
    expect(await wrapRefused(k.pub)).toBe(`vigil: signing key ${k.pub}: ${hint}`);
    const copy = tmp.file("copy.pub");
    cpSync(k.pub, copy);
    chmodSync(copy, 0o600);
    expect(await wrapRefused(copy)).toBe(`vigil: signing key ${copy}: ${hint}`);
  });

  test("a symbolic link to a good key (how a Kubernetes secret volume mounts it) is followed; a link to a 0644 key is refused by the target's mode", async () => {
    const tmp = scratch();
    const k = await keygen(tmp.file("ops"));
    const link = tmp.file("link.key");
    symlinkSync(k.key, link);
    const capture = tmp.file("capture");
    const run = await runVigil(["wrap", "--allow-all", "--capture-dir", capture, "--event-source", EVENT_SOURCE, "--signing-key", link, "--", "/bin/sh", "-c", "exit 0"]);
    expect(run.code).toBe(0);
    const open = tmp.file("open.key");
    cpSync(k.key, open);
    chmodSync(open, 0o644);
    const openLink = tmp.file("open-link.key");
    symlinkSync(open, openLink);
    expect(await wrapRefused(openLink)).toBe(`vigil: signing key ${openLink}: readable or writable by group/others (mode 0644); chmod 600 it`);
  });

  test("an EC key: its type named, without a broken article", async () => {
    const tmp = scratch();
    const ec = tmp.file("ec.key");
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    writeFileSync(ec, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    expect(await wrapRefused(ec)).toBe(`vigil: signing key ${ec}: not an Ed25519 key (its type is ec); create one with vigil keygen`);
  });
});

describe("verify keys that are not there", () => {
  test("--public-key of a missing file, --trusted-keys of a missing directory or a file: one line, exit 64", async () => {
    const tmp = scratch();
    const k = await keygen(tmp.file("ops"));
    const rows: [string[], string][] = [
      [["--public-key", tmp.file("nope.pub")], `vigil: verify: public key ${tmp.file("nope.pub")}: no such file`],
      [["--trusted-keys", tmp.file("nokeys")], `vigil: verify: trusted keys ${tmp.file("nokeys")}: no such directory`],
      [["--trusted-keys", k.pub], `vigil: verify: trusted keys ${k.pub}: not a directory (give the directory holding the .pub files, or --public-key FILE)`],
      [["--public-key", k.key], `vigil: verify: public key ${k.key}: a private key; give its .pub file`],
    ];
    for (const [args, line] of rows) {
      const r = runVerify([SIGNED_CAPTURE, ...args]);
      expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 64, stdout: "", stderr: `${line}\n` });
    }
  });
});

describe("keygen over an existing key", () => {
  test("says that nothing was written and how to go on", async () => {
    const tmp = scratch();
    await keygen(tmp.file("ops"));
    const again = await runVigil(["keygen", "--out", tmp.file("ops")]);
    expect({ code: again.code, stdout: again.stdout, stderr: again.stderr }).toEqual({
      code: 2,
      stdout: "",
      stderr: `vigil: keygen: cannot create ${tmp.file("ops")}.key: it already exists (keygen never overwrites a key: choose another --out, or remove the old pair)\n`,
    });
  });
});

describe("verify with the wrong key", () => {
  test("names the key that signed and the keys that were trusted", async () => {
    const tmp = scratch();
    const other = await keygen(tmp.file("other"));
    const r = runVerify([SIGNED_CAPTURE, "--public-key", other.pub]);
    expect(r.code).toBe(2);
    const signer = "2307b47efb04853f"; // test/fixtures/keys/golden.pub
    expect(r.stdout).toContain(`✗ capture.dsse.json: signed by key ${signer}…, which is not trusted (trusted: ${other.keyid.slice(0, 16)}…)\n`);
    // The right key still verifies it.
    expect(runVerify([SIGNED_CAPTURE, "--public-key", GOLDEN_PUB]).code).toBe(0);
  });
});

describe("a serve session directory under another name", () => {
  test("the report names the session the records belong to and the directory's name", async () => {
    const tmp = scratch();
    const renamed = tmp.file("inbox-2026-12");
    cpSync(SIGNED_SESSION, renamed, { recursive: true });
    const r = runVerify([renamed, "--public-key", GOLDEN_PUB]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(`decisions.ndjson: line 1: belongs to session "inbox", not "inbox-2026-12" (a serve session is named by its directory: keep the name when copying it)\n`);
    expect(r.stdout).toContain(`stops/1.dsse.json: names session "inbox", not "inbox-2026-12" (the directory's name)\n`);
    // Under its own name it verifies.
    const kept = join(tmp.file("archive"), "inbox");
    cpSync(SIGNED_SESSION, kept, { recursive: true });
    const ok = runVerify([kept, "--public-key", GOLDEN_PUB]);
    expect(ok.code).toBe(0);
    // One record is "1 record".
    expect(ok.stdout).toContain("covers decisions.ndjson 1 record, events.ndjson 2 records; 1 stop envelope, 1 checkpoint\n");
  });
});

describe("help", () => {
  test("verify is described as reading wrap captures and serve session directories", async () => {
    const top = await runVigil(["--help"]);
    expect(top.stdout).toMatch(/verify +Check a wrap capture or a serve session directory offline: closed \(0\), incomplete \(1\) or unknown \(2\)/);
    const verify = await runVigil(["verify", "--help"]);
    expect(verify.stdout).toContain("Check a wrap capture or a serve session directory offline: closed (0), incomplete (1) or unknown (2)");
  });
});

describe("a long signed session stays verifiable", () => {
  test("a capture with more than 10,000 checkpoints (--checkpoint-every 1) verifies closed and authenticated", async () => {
    const tmp = scratch();
    const k = await keygen(tmp.file("ops"));
    const capture = tmp.file("capture");
    // Every request is a record (its receipt), and so a checkpoint: 10,101 of them.
    const requests = [{ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }];
    for (let i = 1; i <= 10_100; i++) requests.push({ jsonrpc: "2.0", id: i, method: "ping" } as never);
    const input = tmp.file("input.ndjson");
    writeFileSync(input, `${requests.map((r) => JSON.stringify(r)).join("\n")}\n`);
    // At client EOF the server still has most of the pings queued, and each answer waits for its
    // checkpoint's fdatasyncs: on a loaded machine that outlasts the default 3 s shutdown grace
    // (the server is then stopped and wrap exits 143). The grace is not what this test is about.
    const proc = Bun.spawn(
      [VIGIL_BIN, "wrap", "--allow-all", "--capture-dir", capture, "--event-source", EVENT_SOURCE, "--signing-key", k.key, "--checkpoint-every", "1", "--shutdown-grace-ms", "100000", "--", process.execPath, join(REPO_ROOT, "test/fixtures/servers/fixture-server.ts")],
      { stdin: Bun.file(input), stdout: "ignore", stderr: "pipe" },
    );
    expect(await proc.exited).toBe(0);
    const r = runVerify([capture, "--json", "--public-key", k.pub]);
    const doc = JSON.parse(r.stdout);
    expect({ verdict: doc.verdict, authenticated: doc.authentication.authenticated }).toEqual({ verdict: "closed", authenticated: true });
    expect(doc.authentication.covered.checkpoints).toBeGreaterThan(10_000);
  }, 120_000);
});
