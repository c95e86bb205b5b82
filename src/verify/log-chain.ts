/**
 * The hash chain of one log (src/evidence/chain.ts), recomputed by the verifier from the log's
 * complete lines. Pure. Shared by capture and serve-session verification.
 *
 * Checkpoints, stop records and statements name a head at a count; each is answered from the
 * same single pass (every line is hashed exactly once) and from the lines' own `vigilprev`
 * strings, so memory stays one small link per line.
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
  const r = checkChain(links, anchor);
  const linked = r.head.count;
  return {
    head: r.head,
    break: r.break,
    // The head after `count` records is what the next record's vigilprev says — checked equal to
    // it for every line that links — so no second copy of the heads is kept.
    headAt: (count) => {
      if (!Number.isSafeInteger(count) || count < 0 || count > linked) return null;
      if (count === 0) return anchor;
      return count === linked ? r.head.head : (links[count]!.value!.vigilprev as string);
    },
  };
}

/** The `chain_broken` finding of a chain, or null when it links. */
export function chainFinding(file: string, chain: RecomputedChain): Finding | null {
  if (chain.break === null) return null;
  return unknownFinding("chain_broken", file, `hash chain broken at ${chain.break.message}`);
}
