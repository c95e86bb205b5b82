/**
 * What `vigil verify` says of the committed v2 goldens (goldens-v2.ts): the verdict and the reason
 * codes, in order — the same from the binary (test/e2e/verify-golden-v2.test.ts) and from the pure
 * verifier in process (test/unit/verify/verify-golden-v2.test.ts).
 */
import type { CaptureKind } from "./capture.ts";
import type { SignedKind } from "./goldens-v2.ts";

export interface GoldenVerdict {
  verdict: "closed" | "incomplete" | "unknown";
  codes: string[];
}

/** Without a key: what the v1 goldens give (verify-golden.test.ts), for every format. */
export const UNKEYED: Record<CaptureKind, GoldenVerdict> = {
  clean: { verdict: "closed", codes: [] },
  exit7: { verdict: "closed", codes: [] },
  sigkill: { verdict: "closed", codes: [] },
  poisoned: { verdict: "incomplete", codes: ["decision_events_lost"] },
};

/** A capture with no envelope (v1, or v2 unsigned) and a key: unknown, its own findings kept. */
export const unsignedKeyed = (kind: CaptureKind): GoldenVerdict => ({ verdict: "unknown", codes: [...UNKEYED[kind].codes, "signature_missing"] });

export const SIGNED_UNKEYED: Record<SignedKind, GoldenVerdict> = { ...UNKEYED, died: { verdict: "unknown", codes: ["file_missing", "stop_missing"] } };
export const SIGNED_KEYED: Record<SignedKind, GoldenVerdict> = { ...UNKEYED, died: { verdict: "incomplete", codes: ["stop_missing_checkpointed"] } };

/** Signed by a key that is not the trusted one: the envelope and the checkpoints are refused. */
export const SIGNED_OTHER_KEY: Record<SignedKind, string[]> = {
  clean: ["key_untrusted", "key_untrusted"],
  exit7: ["key_untrusted", "key_untrusted"],
  sigkill: ["key_untrusted", "key_untrusted"],
  poisoned: ["decision_events_lost", "key_untrusted", "key_untrusted"],
  died: ["key_untrusted", "stop_missing"],
};
