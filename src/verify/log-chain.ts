/**
 * The hash chain of one log (src/evidence/chain.ts), recomputed by the verifier from the log's
 * complete lines. Pure. Shared by capture and serve-session verification.
 *
 * The heads passed on the way are kept (one 64-character string per line, O(lines)), so that
 * checkpoints, stop records and statements — which name a head at a count — are checked against
 * the same single pass: every line is hashed exactly once.
 */
import { type ChainBreak, type ChainHead, checkChain } from "../evidence/chain.ts";
import { type Finding, unknownFinding } from "./findings.ts";

/** What the chain check needs of one line: its bytes (no newline) and its chain attributes. */
export interface ChainLink {
  raw: Uint8Array;
  /** `{vigilseq, vigilprev}` of the parsed record, or null when the line is not a JSON object. */
  value: { vigilseq: unknown; vigilprev: unknown } | null;
}

export interface RecomputedChain {
  /** The head after the lines that link (every complete line, when there is no break). */
  readonly head: ChainHead;
  readonly break: ChainBreak | null;
  /** The head after `count` records (0: the anchor); null past the lines that link. */
  headAt(count: number): string | null;
}

/** The chain attributes of a parsed line, without holding on to the rest of the record. */
export function linkOf(raw: Uint8Array, parsed: unknown): ChainLink {
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { raw, value: null };
  const r = parsed as { vigilseq?: unknown; vigilprev?: unknown };
  return { raw, value: { vigilseq: r.vigilseq, vigilprev: r.vigilprev } };
}

export function recomputeChain(links: readonly ChainLink[], anchor: string): RecomputedChain {
  const heads: string[] = [anchor];
  const r = checkChain(links, anchor, (count, head) => {
    heads[count] = head;
  });
  return {
    head: r.head,
    break: r.break,
    headAt: (count) => (Number.isSafeInteger(count) && count >= 0 && count < heads.length ? heads[count]! : null),
  };
}

/** The `chain_broken` finding of a chain, or null when it links. */
export function chainFinding(file: string, chain: RecomputedChain): Finding | null {
  if (chain.break === null) return null;
  return unknownFinding("chain_broken", file, `hash chain broken at ${chain.break.message}`);
}
