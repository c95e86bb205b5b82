/**
 * `vigil verify` (the compiled binary) on the committed v2 goldens of test/helpers/goldens-v2.ts,
 * with and without the goldens' public key, and on the v1 goldens with a key (issue 14: "Golden
 * captures (v1 and v2, signed and unsigned) pinned in test/fixtures/"):
 *
 * - unsigned v2: the v1 verdicts without a key; with one, unknown (signature_missing);
 * - signed v2: the same verdicts without a key ("not authenticated"); with test/fixtures/keys/golden.pub
 *   authenticated, the key id and what is covered in --json; `died` (no stop record) is incomplete
 *   (stop_missing_checkpointed) with the key and unknown without; another trusted key: key_untrusted;
 * - v1 with a key: unknown (signature_missing: v1 was never signed);
 * - a signed serve session (sessions-signed/inbox): closed with its event accounting, authenticated.
 *
 * A reader change that refuses yesterday's v2 captures, or a signature format change, fails here.
 */
import { describe, expect, test } from "bun:test";
import { createHash, createPublicKey, generateKeyPairSync } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CAPTURE, CAPTURE_KINDS, type VerifyJson, goldenDir, runVerify } from "../helpers/capture.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { tmpDir } from "../helpers/fixture.ts";
import {
  GOLDEN_CHECKPOINT_EVERY,
  GOLDEN_PUBLIC_KEY,
  GOLDEN_SESSION,
  SIGNED_KINDS,
  goldenSessionDir,
  goldenV2Dir,
  goldenV2SignedDir,
} from "../helpers/goldens-v2.ts";
import { type GoldenVerdict, SIGNED_KEYED, SIGNED_OTHER_KEY, SIGNED_UNKEYED, UNKEYED, unsignedKeyed } from "../helpers/golden-v2-verdicts.ts";

const cleanups = e2eSuite();

const ENVELOPE = "capture.dsse.json";
const CHECKPOINTS = "checkpoints.ndjson";
const KEY = ["--public-key", GOLDEN_PUBLIC_KEY];
const GOLDEN_KEYID = createHash("sha256").update(createPublicKey(readFileSync(GOLDEN_PUBLIC_KEY)).export({ type: "spki", format: "der" })).digest("hex");

/** A public key no golden was signed with (its private half is never written). */
function otherKey(): string {
  const t = tmpDir("vigil-golden-v2-other");
  cleanups.add(() => t.cleanup());
  const pub = t.file("other.pub");
  writeFileSync(pub, generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }) as string);
  return pub;
}

const verify = (dir: string, extra: string[] = []) => {
  const r = runVerify([dir, "--json", ...extra]);
  let doc: VerifyJson & Record<string, any>;
  try {
    doc = JSON.parse(r.stdout);
  } catch {
    throw new Error(`verify --json printed no JSON (exit ${r.code}):\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
  return { code: r.code, stderr: r.stderr, doc, codes: doc.reasons.map((f) => f.code) };
};
const NOT_AUTHENTICATED = { authenticated: false, keyid: null, covered: null };
const lines = (path: string) => readFileSync(path, "utf8").split("\n").length - 1;
const json = (path: string) => JSON.parse(readFileSync(path, "utf8"));

/** The exit status of each verdict (verify.md), pinned here rather than taken from the source. */
const EXIT = { closed: 0, incomplete: 1, unknown: 2 } as const;
type Want = GoldenVerdict & { exit: number };
const want = (v: GoldenVerdict): Want => ({ verdict: v.verdict, exit: EXIT[v.verdict], codes: v.codes });

const expectVerdict = (r: ReturnType<typeof verify>, v: GoldenVerdict) => {
  expect({ verdict: r.doc.verdict, exit: r.code, codes: r.codes }).toEqual(want(v));
  expect(r.stderr).toBe("");
};

describe("v1 goldens (never signed) with a key", () => {
  for (const kind of CAPTURE_KINDS) {
    test(`${kind}: unknown, signature_missing saying v1 is never signed`, () => {
      const r = verify(goldenDir(kind), KEY);
      expectVerdict(r, unsignedKeyed(kind));
      expect(r.doc.reasons.find((f) => f.code === "signature_missing")).toMatchObject({ file: ENVELOPE, message: expect.stringMatching(/vigil\.capture\.v1 capture: that format is never signed/) });
      expect(r.doc.authentication).toMatchObject(NOT_AUTHENTICATED);
    });
  }
});

describe("unsigned v2 goldens", () => {
  for (const kind of CAPTURE_KINDS) {
    test(`${kind}: v2 on disk; ${UNKEYED[kind].verdict} without a key, unknown (signature_missing) with one`, () => {
      const dir = goldenV2Dir(kind);
      expect(json(join(dir, CAPTURE.manifest)).format).toBe("vigil.capture.v2");
      expect(json(join(dir, CAPTURE.stop)).type).toBe("vigil.mcp.session.stop.v2");
      expect(readdirSync(dir)).not.toContain(ENVELOPE);
      expect(readdirSync(dir)).not.toContain(CHECKPOINTS);

      const plain = verify(dir);
      expectVerdict(plain, UNKEYED[kind]);
      expect(plain.doc.authentication).toEqual(NOT_AUTHENTICATED);
      const stop = json(join(dir, CAPTURE.stop)).data;
      expect(plain.doc.decisions).toEqual({ written: stop.decision_events_written, dropped: stop.decision_events_dropped, verified: stop.decision_events_written });
      expect(stop.checkpoints).toBeNull();
      expect(runVerify([dir]).stdout.split("\n")).toContain("  not authenticated (no --public-key)");

      expectVerdict(verify(dir, KEY), unsignedKeyed(kind));
    });
  }
});

describe("signed v2 goldens", () => {
  for (const kind of SIGNED_KINDS) {
    const died = kind === "died";
    test(`${kind}: ${SIGNED_KEYED[kind].verdict} and authenticated with golden.pub; ${SIGNED_UNKEYED[kind].verdict} without; key_untrusted with another key`, () => {
      const dir = goldenV2SignedDir(kind);
      const names = readdirSync(dir).sort();
      const cpCount = lines(join(dir, CHECKPOINTS));
      expect(cpCount).toBeGreaterThan(0);
      if (died) for (const name of [CAPTURE.stop, CAPTURE.manifest, ENVELOPE]) expect(names).not.toContain(name);
      else expect(names).toContain(ENVELOPE);

      const keyed = verify(dir, KEY);
      expectVerdict(keyed, SIGNED_KEYED[kind]);
      const a = keyed.doc.authentication;
      expect(a.authenticated).toBe(true);
      expect(a.keyid).toBe(GOLDEN_KEYID);
      expect(a.covered!.checkpoints).toBe(cpCount);
      if (died) {
        // Checkpoints only: the last one names every record of both logs (goldens-v2.ts waited for it).
        expect(a.covered!.files).toEqual([]);
        for (const log of [CAPTURE.decisions, CAPTURE.receipts]) expect(a.covered!.logs[log]!.count).toBe(lines(join(dir, log)));
        expect(keyed.doc.reasons[0]!.message).toMatch(/covers decisions\.ndjson 2 of 2 records, receipts\.ndjson 4 of 4 records/);
        // The session line says what verified, not "no decision log": there is no stop record to say what was written.
        expect(runVerify([dir, ...KEY]).stdout.split("\n")[1]).toEndWith("no stop record; decisions 2 verified");
      } else {
        expect(a.covered!.files).toEqual(names.filter((n) => n !== ENVELOPE));
        const stop = json(join(dir, CAPTURE.stop)).data;
        expect(a.covered!.logs).toEqual(stop.chains);
        expect(stop.checkpoints).toEqual({ written: cpCount });
        // checkpoint-every 2: one per two records, none after the last (wrap's stop does not add one).
        const records = Object.values(stop.chains as Record<string, { count: number }>).reduce((n, c) => n + c.count, 0);
        expect(cpCount).toBe(Math.floor(records / GOLDEN_CHECKPOINT_EVERY));
        expect(runVerify([dir, ...KEY]).stdout.split("\n")[2]).toStartWith(`  signed by ${GOLDEN_KEYID} — covers ${names.length - 1} files`);
      }
      // --trusted-keys: the directory that holds golden.pub.
      expectVerdict(verify(dir, ["--trusted-keys", join(GOLDEN_PUBLIC_KEY, "..")]), SIGNED_KEYED[kind]);

      const plain = verify(dir);
      expectVerdict(plain, SIGNED_UNKEYED[kind]);
      expect(plain.doc.authentication).toEqual(NOT_AUTHENTICATED);

      const other = verify(dir, ["--public-key", otherKey()]);
      expect({ verdict: other.doc.verdict, exit: other.code, codes: other.codes }).toEqual({ verdict: "unknown", exit: 2, codes: SIGNED_OTHER_KEY[kind] });
      expect(other.doc.reasons.filter((f) => f.code === "key_untrusted").map((f) => f.file)).toEqual(died ? [CHECKPOINTS] : [ENVELOPE, CHECKPOINTS]);
      expect(other.doc.authentication.authenticated).toBe(false);
    });
  }
});

describe("signed serve session golden (sessions-signed/inbox)", () => {
  const dir = goldenSessionDir();

  test("with golden.pub: closed, authenticated by stop 1 and the checkpoints, every event accounted for", () => {
    expect(readdirSync(dir).sort()).toEqual([CHECKPOINTS, "decisions.ndjson", "events.ndjson", "stops"]);
    expect(readdirSync(join(dir, "stops"))).toEqual(["1.dsse.json"]);
    const r = verify(dir, KEY);
    expectVerdict(r, { verdict: "closed", codes: [] });
    expect(r.doc).toMatchObject({
      kind: "serve_session",
      session_id: GOLDEN_SESSION,
      events: { received: 1, delivered: 1, dropped: 0, gaps: 0, pending: [] },
      decisions: { written: 1, verified: 1 },
      authentication: { authenticated: true, keyid: GOLDEN_KEYID, stops: 1, checkpoints: lines(join(dir, CHECKPOINTS)) },
    });
    expect(r.doc.authentication.covered!.logs).toMatchObject({ "decisions.ndjson": { count: 1 }, "events.ndjson": { count: 2 } });
    expectVerdict(verify(dir, ["--trusted-keys", join(GOLDEN_PUBLIC_KEY, "..")]), { verdict: "closed", codes: [] });
  });

  test("without a key: closed, not authenticated; another key: unknown (key_untrusted)", () => {
    const plain = verify(dir);
    expectVerdict(plain, { verdict: "closed", codes: [] });
    expect(plain.doc.authentication.authenticated).toBe(false);
    expect(runVerify([dir]).stdout).toContain("not authenticated");

    const other = verify(dir, ["--public-key", otherKey()]);
    expect({ verdict: other.doc.verdict, exit: other.code }).toEqual({ verdict: "unknown", exit: 2 });
    expect(other.doc.reasons.map((f) => [f.code, f.file])).toEqual([["key_untrusted", "stops/1.dsse.json"], ["key_untrusted", CHECKPOINTS]]);
  });
});
