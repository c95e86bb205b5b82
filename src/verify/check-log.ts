/**
 * Accounting of one NDJSON evidence log against what the stop record says was written: count of
 * complete lines, SHA-256 of exactly those bytes, one record per line of this session with `seq`
 * contiguous from 0, and a partial tail only where loss was recorded. A chained (v2) log's hash
 * chain is recomputed in the same pass (log-chain.ts).
 */
import { sha256Hex } from "../shared/digest.ts";
import { type Finding, type FindingCode, unknownFinding } from "./findings.ts";
import { type Shape, shapeProblem } from "./line-shapes.ts";
import { type ChainLink, type RecomputedChain, chainFinding, linkOf, recomputeChain } from "./log-chain.ts";
import { parseRecord, splitNdjson } from "./strict-records.ts";

export interface LogExpectation {
  file: string;
  bytes: Uint8Array;
  maxLines: number;
  /** What the stop record says was written; null when there is no stop record to hold it to. */
  accounting: { written: number; prefixSha256: string } | null;
  /** The chain's anchor for a chained (v2) log; absent for a v1 log. */
  chainAnchor?: string;
  /** SHA-256 of the whole file when already known: it is the prefix digest when there is no tail. */
  fileSha256?: string;
  tailAllowed: boolean;
  shape: Shape;
  type: string;
  source: string;
  sessionId: string;
  idFor: (seq: number) => string;
  codes: {
    count: FindingCode;
    digest: FindingCode;
    record: FindingCode;
    seq: FindingCode;
    session: FindingCode;
    tail: FindingCode;
  };
}

export interface LogResult {
  findings: Finding[];
  /** Complete lines that passed every per-record check. */
  verified: number;
  /** The recomputed chain of a chained log (null for a v1 log, or one over its line bound). */
  chain: RecomputedChain | null;
}

/**
 * Each line leaves a few KiB of parse garbage; on a 10,000-line log the collector's own pacing lets
 * it pile up to several times the log's size. A forced collection every this many lines (~4 ms
 * each) brings verify's peak above the runtime's own baseline from ~5× to ~4× the capture
 * (bench/RESULTS.md, verify).
 */
export const COLLECT_EVERY_LINES = 3000;

/** Per-record findings stop after this many, so a hostile log cannot flood the report. */
const MAX_RECORD_FINDINGS = 10;

export function checkLog(x: LogExpectation): LogResult {
  const findings: Finding[] = [];
  const split = splitNdjson(x.bytes, x.maxLines);
  if (split === null) {
    return { findings: [unknownFinding("too_many_lines", x.file, `more than ${x.maxLines} lines`)], verified: 0, chain: null };
  }
  const a = x.accounting;
  if (a !== null && split.lines.length !== a.written) {
    findings.push(unknownFinding(x.codes.count, x.file, `${split.lines.length} complete lines but session-stop says ${a.written} written`));
  }
  const prefix = a === null ? null : split.tail.length === 0 && x.fileSha256 !== undefined ? x.fileSha256 : sha256Hex(split.completeBytes);
  if (a !== null && prefix !== a.prefixSha256) {
    findings.push(unknownFinding(x.codes.digest, x.file, "SHA-256 of the complete lines differs from the recorded prefix digest"));
  }
  // Only each line's chain attributes are kept (not its record), so memory stays one small
  // object per line; the chain is hashed after the per-record pass.
  const links: ChainLink[] | null = x.chainAnchor === undefined ? null : [];
  if (split.tail.length > 0 && !x.tailAllowed) {
    findings.push(unknownFinding(x.codes.tail, x.file, `${split.tail.length} bytes after the last newline, but no loss was recorded`));
  }
  let verified = 0;
  let recordFindings = 0;
  const report = (code: FindingCode, message: string) => {
    if (recordFindings++ < MAX_RECORD_FINDINGS) findings.push(unknownFinding(code, x.file, message));
  };
  // Lines are decoded one at a time as they are checked (a whole-log string would be a second
  // copy of the log held for the whole run), so only one line's objects are live.
  split.lines.forEach((line, i) => {
    const where = `line ${i + 1}: `;
    if (i % COLLECT_EVERY_LINES === COLLECT_EVERY_LINES - 1) Bun.gc(true);
    const parsed = parseRecord(line, x.file, where);
    links?.push(linkOf(line, parsed.ok ? parsed.value : null));
    if (!parsed.ok) {
      report(parsed.finding.code, parsed.finding.message);
      return;
    }
    const problem = shapeProblem(parsed.value, x.shape);
    if (problem !== null) {
      report(x.codes.record, `${where}${problem}`);
      return;
    }
    const rec = parsed.value as { specversion: string; type: string; source: string; id: string; data: { session_id: string; seq: number } };
    if (rec.specversion !== "1.0" || rec.type !== x.type) return report(x.codes.record, `${where}not a ${x.type} event`);
    if (rec.source !== x.source) return report(x.codes.record, `${where}source differs from the session's`);
    if (rec.data.session_id !== x.sessionId) return report(x.codes.session, `${where}belongs to another session`);
    if (rec.data.seq !== i) return report(x.codes.seq, `${where}seq ${rec.data.seq}, expected ${i}`);
    if (rec.id !== x.idFor(i)) return report(x.codes.record, `${where}id ${JSON.stringify(rec.id)} does not match its session and seq`);
    verified++;
  });
  if (recordFindings > MAX_RECORD_FINDINGS) {
    findings.push(unknownFinding(x.codes.record, x.file, `${recordFindings - MAX_RECORD_FINDINGS} more record problems not listed`));
  }
  const chain = links === null ? null : recomputeChain(links, x.chainAnchor!);
  const broken = chain === null ? null : chainFinding(x.file, chain);
  if (broken !== null) findings.push(broken);
  return { findings, verified, chain };
}
