/**
 * One pass over a chained NDJSON log of a serve session: every complete line parsed strictly and
 * checked (chain link, shape, type, source, session, id) while its head and, at the counts a stop
 * statement names, the digest of the prefix so far are taken — so the log is read once, however
 * many envelopes refer to it. Pure apart from hashing.
 */
import { type Finding, type FindingCode, unknownFinding } from "../findings.ts";
import { type Shape, shapeProblem } from "../line-shapes.ts";
import { parseRecord } from "../strict-records.ts";

/**
 * Parse garbage piles up to several times a log's size between the collector's own passes
 * (check-log.ts COLLECT_EVERY_LINES). A session log is up to 64 MiB, where a forced collection
 * costs ~20 ms: one every 8 MiB parsed keeps the peak near the log's size for ~8 collections.
 */
const COLLECT_EVERY_BYTES = 8 * 1024 * 1024;
/** Per-record findings stop after this many per log, so a hostile log cannot flood the report. */
const MAX_RECORD_FINDINGS = 10;
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

export interface LogScanSpec {
  file: string;
  bytes: Uint8Array;
  maxLines: number;
  sessionId: string;
  /** The session's event source: set by the first record read (of any log) when still null. */
  source: { value: string | null };
  /** The chain's anchor, given the session's event source. */
  anchor: (source: string) => string;
  /** The record shape for a CloudEvents `type`, or null when the type does not belong in this log. */
  shapeFor: (type: unknown) => Shape | null;
  /** The `id` record number `vigilseq` must carry. */
  idFor: (vigilseq: number) => string;
  /** A further check of a well-formed record (its data's own rules); null when it holds. */
  dataProblem?: (data: Record<string, unknown>, vigilseq: number) => { code: FindingCode; message: string } | null;
  /** Sees every record that passed all checks, in order. */
  onRecord?: (record: { type: string; data: Record<string, unknown> }, line: number) => void;
  /** Told after each count of lines (0 first, before any line). */
  afterCount?: (count: number) => void;
  /** Counts of complete lines after which the digest of the prefix is wanted. */
  prefixAt: ReadonlySet<number>;
  codes: { record: FindingCode; session: FindingCode };
}

export interface LogScan {
  file: string;
  /** Complete lines (bounded by maxLines: past it, nothing was parsed). */
  lines: number;
  /** Bytes after the last newline (an unfinished record). */
  tailBytes: number;
  /** Lines that passed every check. */
  verified: number;
  /** Where the chain first fails to link (1-based line), or null. */
  chainBreak: number | null;
  findings: Finding[];
  /** SHA-256 of the first n complete lines, for each wanted n ≤ lines. */
  prefix: Map<number, string>;
  /** The chain's head after `count` records (the anchor at 0), or null past the end. */
  headAt(count: number): string | null;
}

/** A log that is not there: no lines, its head the anchor. */
export function emptyScan(file: string, anchor: () => string | null): LogScan {
  return {
    file,
    lines: 0,
    tailBytes: 0,
    verified: 0,
    chainBreak: null,
    findings: [],
    prefix: new Map([[0, EMPTY_SHA256]]),
    headAt: (count) => (count === 0 ? anchor() : null),
  };
}

export function scanLog(x: LogScanSpec): LogScan {
  const findings: Finding[] = [];
  const lines = countLines(x.bytes, x.maxLines);
  if (lines === null) {
    const scan = emptyScan(x.file, () => null);
    scan.findings.push(unknownFinding("too_many_lines", x.file, `more than ${x.maxLines} lines`));
    return scan;
  }
  // 32 bytes of head per line (8 MB for 250,000 lines): any count a checkpoint names is a lookup.
  const heads = new Uint8Array(lines * 32);
  const prefix = new Map<number, string>();
  const hasher = new Bun.CryptoHasher("sha256");
  let hashedTo = 0;
  let anchor: string | null = null;
  let prev = "";
  let verified = 0;
  let chainBreak: number | null = null;
  let reported = 0;
  const report = (code: FindingCode, message: string) => {
    if (reported++ < MAX_RECORD_FINDINGS) findings.push(unknownFinding(code, x.file, message));
  };
  const wantPrefix = (count: number, end: number) => {
    if (!x.prefixAt.has(count)) return;
    hasher.update(x.bytes.subarray(hashedTo, end));
    hashedTo = end;
    prefix.set(count, hasher.copy().digest("hex"));
  };
  wantPrefix(0, 0);
  x.afterCount?.(0);
  let start = 0;
  let nextCollect = COLLECT_EVERY_BYTES;
  for (let i = 0; i < lines; i++) {
    const nl = x.bytes.indexOf(0x0a, start);
    const where = `line ${i + 1}: `;
    if (start >= nextCollect) {
      Bun.gc(true);
      nextCollect = start + COLLECT_EVERY_BYTES;
    }
    const raw = x.bytes.subarray(start, nl);
    const parsed = parseRecord(raw, x.file, where);
    const rec = parsed.ok && typeof parsed.value === "object" && parsed.value !== null ? (parsed.value as Record<string, unknown>) : null;
    if (i === 0 && x.source.value === null && typeof rec?.source === "string") x.source.value = rec.source;
    if (i === 0) anchor = x.source.value === null ? null : x.anchor(x.source.value);
    const expectedPrev = i === 0 ? anchor : prev;
    if (chainBreak === null && (rec === null || rec.vigilseq !== i || rec.vigilprev !== expectedPrev)) {
      chainBreak = i + 1;
      const why = rec === null ? "not a record" : rec.vigilseq !== i ? `vigilseq ${JSON.stringify(rec.vigilseq)}, expected ${i}` : `vigilprev does not link to the ${i === 0 ? "chain's anchor" : "line before it"}`;
      findings.push(unknownFinding("chain_broken", x.file, `${where}${why}`));
    }
    Bun.SHA256.hash(x.bytes.subarray(start, nl + 1), heads.subarray(i * 32, i * 32 + 32));
    prev = Buffer.from(heads.buffer, heads.byteOffset + i * 32, 32).toString("hex");
    start = nl + 1;
    wantPrefix(i + 1, start);
    if (!parsed.ok) report(parsed.finding.code, parsed.finding.message);
    else if (rec !== null) checkRecord(x, rec, i, where, report, () => verified++);
    else report(x.codes.record, `${where}not an object`);
    x.afterCount?.(i + 1);
  }
  if (reported > MAX_RECORD_FINDINGS) findings.push(unknownFinding(x.codes.record, x.file, `${reported - MAX_RECORD_FINDINGS} more record problems not listed`));
  return {
    file: x.file,
    lines,
    tailBytes: x.bytes.length - start,
    verified,
    chainBreak,
    findings,
    prefix,
    headAt: (count) => {
      if (!Number.isSafeInteger(count) || count < 0 || count > lines) return null;
      if (count === 0) return anchor ?? (x.source.value === null ? null : x.anchor(x.source.value));
      return Buffer.from(heads.buffer, heads.byteOffset + (count - 1) * 32, 32).toString("hex");
    },
  };
}

function checkRecord(x: LogScanSpec, rec: Record<string, unknown>, i: number, where: string, report: (code: FindingCode, message: string) => void, ok: () => void): void {
  const shape = x.shapeFor(rec.type);
  if (shape === null) return report(x.codes.record, `${where}type ${JSON.stringify(String(rec.type).slice(0, 64))} does not belong in this log`);
  const problem = shapeProblem(rec, shape);
  if (problem !== null) return report(x.codes.record, `${where}${problem}`);
  if (rec.specversion !== "1.0") return report(x.codes.record, `${where}specversion is not 1.0`);
  if (rec.source !== x.source.value) return report("source_mismatch", `${where}source differs from the session's`);
  const data = rec.data as Record<string, unknown>;
  if (data.session_id !== x.sessionId) return report(x.codes.session, `${where}belongs to session ${JSON.stringify(String(data.session_id).slice(0, 64))}, not ${JSON.stringify(x.sessionId)} (a serve session is named by its directory: keep the name when copying it)`);
  // Against its own vigilseq, not its line: after a removed line the chain break says where, and
  // the records after it still count (a removed delivery then shows as the event it leaves pending).
  const seq = rec.vigilseq as number;
  if (rec.id !== x.idFor(seq)) return report(x.codes.record, `${where}id ${JSON.stringify(String(rec.id).slice(0, 128))} does not match its session and vigilseq`);
  const dataProblem = x.dataProblem?.(data, seq) ?? null;
  if (dataProblem !== null) return report(dataProblem.code, `${where}${dataProblem.message}`);
  ok();
  x.onRecord?.({ type: rec.type as string, data }, i + 1);
}

/** Complete lines of a log, or null past maxLines (counted before anything is parsed). */
function countLines(bytes: Uint8Array, maxLines: number): number | null {
  let n = 0;
  for (let at = bytes.indexOf(0x0a); at >= 0; at = bytes.indexOf(0x0a, at + 1)) {
    if (++n > maxLines) return null;
  }
  return n;
}
