/**
 * Hash chains over evidence logs (wrap.md §12, serve.md "Evidence").
 *
 * Every record of a chained log carries two CloudEvents extension attributes: `vigilseq` (0, 1,
 * 2… per log) and `vigilprev`, the lowercase hex SHA-256 of the previous complete line including
 * its newline. The first record's `vigilprev` is the log's anchor:
 *
 *   anchor = hex SHA-256 of the UTF-8 text  "vigil.chain.v1\n" + event_source + "\n" + session_id + "\n" + log_name
 *
 * so two logs of one session, or the same log of two sessions, never share a chain. A log's
 * *head* is the `vigilprev` its next record will carry: the SHA-256 of its last complete line, or
 * the anchor while it has none. Pure apart from hashing.
 */
import { sha256Hex } from "../shared/digest.ts";

export const CHAIN_DOMAIN = "vigil.chain.v1";

/** How far a chain has come: records written, and the `vigilprev` of the next one. */
export interface ChainHead {
  count: number;
  head: string;
}

export function chainAnchor(eventSource: string, sessionId: string, logName: string): string {
  return sha256Hex(`${CHAIN_DOMAIN}\n${eventSource}\n${sessionId}\n${logName}`);
}

/**
 * The event with `vigilseq` and `vigilprev` set, placed right before `data` (members in a fixed
 * order, so records stay stable byte for byte). Any earlier values are replaced.
 */
export function withChain(event: Record<string, unknown>, seq: number, prev: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in event) {
    if (key === "data" || key === "vigilseq" || key === "vigilprev") continue;
    out[key] = event[key];
  }
  out.vigilseq = seq;
  out.vigilprev = prev;
  if ("data" in event) out.data = event.data;
  return out;
}

/** The running state of one chain as its producer appends to it. */
export class Chain {
  constructor(
    private at: ChainHead,
  ) {}

  static start(anchor: string): Chain {
    return new Chain({ count: 0, head: anchor });
  }

  /** A chain that continues a log already on disk (its records counted, its last line hashed). */
  static resume(head: ChainHead): Chain {
    return new Chain({ ...head });
  }

  get state(): ChainHead {
    return { ...this.at };
  }

  /** The line of the next record (no newline); call `advance` with it once it is written. */
  line(event: Record<string, unknown>): string {
    return JSON.stringify(withChain(event, this.at.count, this.at.head));
  }

  /** The record `line` (without its newline) is now a complete line of the log. */
  advance(line: string): void {
    this.at = { count: this.at.count + 1, head: sha256Hex(`${line}\n`) };
  }
}

/** Where a chain first fails to link, or null when every line links to the one before it. */
export type ChainBreak = { line: number; problem: "seq" | "prev" | "shape"; message: string };

/**
 * Checks lines (each without its newline, already parsed) against a chain from `anchor`: `vigilseq`
 * contiguous from 0 and every `vigilprev` the SHA-256 of the line before (the first: the anchor).
 * `onHead(i, head)` sees the head after each line i (0-based): what a checkpoint over i+1 lines names.
 */
export function checkChain(
  lines: readonly { raw: Uint8Array; value: unknown }[],
  anchor: string,
  onHead?: (count: number, head: string) => void,
): { break: ChainBreak | null; head: ChainHead } {
  let head = anchor;
  for (let i = 0; i < lines.length; i++) {
    const { raw, value } = lines[i]!;
    const rec = value as { vigilseq?: unknown; vigilprev?: unknown };
    if (typeof rec !== "object" || rec === null || typeof rec.vigilseq !== "number" || typeof rec.vigilprev !== "string") {
      return { break: { line: i + 1, problem: "shape", message: `line ${i + 1}: no vigilseq/vigilprev` }, head: { count: i, head } };
    }
    if (rec.vigilseq !== i) return { break: { line: i + 1, problem: "seq", message: `line ${i + 1}: vigilseq ${rec.vigilseq}, expected ${i}` }, head: { count: i, head } };
    if (rec.vigilprev !== head) {
      return { break: { line: i + 1, problem: "prev", message: `line ${i + 1}: vigilprev does not link to the ${i === 0 ? "chain's anchor" : "line before it"}` }, head: { count: i, head } };
    }
    head = lineSha256(raw);
    onHead?.(i + 1, head);
  }
  return { break: null, head: { count: lines.length, head } };
}

/** SHA-256 of a complete line: its bytes and the newline that ends it. */
export function lineSha256(raw: Uint8Array): string {
  // A line split out of a file is a view whose newline follows it in the same buffer: hash the
  // view widened by one byte in one call (verify hashes every line of a 10,000-line log this way).
  const end = raw.byteOffset + raw.length;
  if (end < raw.buffer.byteLength && new Uint8Array(raw.buffer, end, 1)[0] === 0x0a) {
    return Bun.SHA256.hash(new Uint8Array(raw.buffer, raw.byteOffset, raw.length + 1), "hex");
  }
  const h = new Bun.CryptoHasher("sha256");
  h.update(raw);
  h.update("\n");
  return h.digest("hex");
}
