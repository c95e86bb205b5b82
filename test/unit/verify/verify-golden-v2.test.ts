/**
 * The pure verifier on the committed goldens (test/helpers/goldens-v2.ts): the same verdicts and
 * reasons the binary gives in test/e2e/verify-golden-v2.test.ts, in process, with the goldens'
 * public key (test/fixtures/keys/golden.pub), without keys, and with another key; and the v1
 * goldens with a key (signature_missing).
 */
import { describe, expect, test } from "bun:test";
import { loadPublicKey } from "../../../src/evidence/keys.ts";
import type { TrustedKey } from "../../../src/evidence/dsse.ts";
import { loadSession } from "../../../src/verify/session/load-session.ts";
import { verifySession } from "../../../src/verify/session/verify-session.ts";
import { loadCapture } from "../../../src/verify/load-capture.ts";
import { verifyCapture } from "../../../src/verify/verify-capture.ts";
import { CAPTURE_KINDS } from "../../helpers/capture.ts";
import { type GoldenVerdict, SIGNED_KEYED, SIGNED_OTHER_KEY, SIGNED_UNKEYED, UNKEYED, unsignedKeyed } from "../../helpers/golden-v2-verdicts.ts";
import { GOLDEN_PUBLIC_KEY, GOLDEN_SESSION, SIGNED_KINDS, goldenSessionDir, goldenV2Dir, goldenV2SignedDir } from "../../helpers/goldens-v2.ts";
import { testKey } from "./capture-v2-builder.ts";
import { captureInputOf, goldenInput } from "./golden-input.ts";

const GOLDEN = loadPublicKey(GOLDEN_PUBLIC_KEY);
const OTHER = testKey("other.pub").trusted;

const capture = (dir: string, trusted: TrustedKey[]): GoldenVerdict & { authenticated: boolean } => {
  const r = verifyCapture(captureInputOf(dir), { requireReceipts: false, trusted });
  return { verdict: r.verdict, codes: r.reasons.map((f) => f.code), authenticated: r.authentication.authenticated };
};

describe("v1 goldens with a key", () => {
  for (const kind of CAPTURE_KINDS) {
    test(`${kind}: unknown, signature_missing added`, () => {
      const r = verifyCapture(goldenInput(kind), { requireReceipts: false, trusted: [GOLDEN] });
      expect({ verdict: r.verdict, codes: r.reasons.map((f): string => f.code) }).toEqual(unsignedKeyed(kind));
    });
  }
});

describe("unsigned v2 goldens", () => {
  for (const kind of CAPTURE_KINDS) {
    test(`${kind}: ${UNKEYED[kind].verdict} without keys, unknown (signature_missing) with the golden key`, () => {
      expect(capture(goldenV2Dir(kind), [])).toEqual({ ...UNKEYED[kind], authenticated: false });
      expect(capture(goldenV2Dir(kind), [GOLDEN])).toEqual({ ...unsignedKeyed(kind), authenticated: false });
    });
  }
});

describe("signed v2 goldens", () => {
  for (const kind of SIGNED_KINDS) {
    test(`${kind}: ${SIGNED_KEYED[kind].verdict} and authenticated with the golden key, ${SIGNED_UNKEYED[kind].verdict} without, key_untrusted with another`, () => {
      const dir = goldenV2SignedDir(kind);
      expect(capture(dir, [GOLDEN])).toEqual({ ...SIGNED_KEYED[kind], authenticated: true });
      expect(capture(dir, [OTHER, GOLDEN])).toEqual({ ...SIGNED_KEYED[kind], authenticated: true });
      expect(capture(dir, [])).toEqual({ ...SIGNED_UNKEYED[kind], authenticated: false });
      expect(capture(dir, [OTHER])).toEqual({ verdict: "unknown", codes: SIGNED_OTHER_KEY[kind], authenticated: false });
      // The inputs built here are what the loader reads from the directory.
      const loaded = verifyCapture(loadCapture(dir), { requireReceipts: false, trusted: [GOLDEN] });
      expect(loaded).toEqual(verifyCapture(captureInputOf(dir), { requireReceipts: false, trusted: [GOLDEN] }));
    });
  }
});

describe("signed serve session golden", () => {
  test("closed and authenticated with the golden key, closed without, key_untrusted with another", () => {
    const input = loadSession(goldenSessionDir());
    expect(input.name).toBe(GOLDEN_SESSION);
    const keyed = verifySession(input, { trusted: [GOLDEN] });
    expect({ verdict: keyed.verdict, reasons: keyed.reasons }).toEqual({ verdict: "closed", reasons: [] });
    expect(keyed.authentication.authenticated).toBe(true);
    expect(verifySession(input, { trusted: [] })).toMatchObject({ verdict: "closed", reasons: [], authentication: { authenticated: false } });
    const other = verifySession(input, { trusted: [OTHER] });
    expect({ verdict: other.verdict, codes: other.reasons.map((f) => f.code) }).toEqual({ verdict: "unknown", codes: ["key_untrusted", "key_untrusted"] });
  });
});
