/**
 * The signed checkpoints of a session (checkpoints.ndjson, src/evidence/checkpoints.ts), checked
 * against trusted keys and against the chains recomputed from the logs. Pure.
 *
 * Every complete line must be a DSSE envelope that verifies under a trusted key, whose payload is a
 * `vigil.checkpoint.v1` of this session and event source, numbered contiguously from 0, whose
 * counts never go down, and whose every head is the head of that log's recomputed chain at that
 * count. The last valid checkpoint says how many records of each log are covered.
 */
import type { ChainHead } from "../evidence/chain.ts";
import { CHECKPOINT_PAYLOAD_TYPE, type TrustedKey, verifyEnvelope } from "../evidence/dsse.ts";
import { CHECKPOINT_TYPE } from "../evidence/statement.ts";
import { parseStrictJson } from "../shared/strict-json.ts";
import { splitNdjson } from "./strict-records.ts";

export interface CheckpointIssue {
  code: "checkpoint_invalid" | "checkpoint_mismatch" | "signature_invalid" | "key_untrusted" | "checkpoint_partial_tail";
  message: string;
}

export interface CheckpointsResult {
  issues: CheckpointIssue[];
  /** Valid checkpoint lines (all of them, when there is no issue). */
  valid: number;
  /** What the last valid checkpoint covers, by log name; null when there is none. */
  covered: Record<string, ChainHead> | null;
  /** The key ids that signed the valid checkpoints. */
  keyids: string[];
}

export interface CheckpointExpectation {
  bytes: Uint8Array;
  maxLines: number;
  trusted: readonly TrustedKey[];
  sessionId: string;
  eventSource: string;
  /** The head of each log's recomputed chain after `count` records, or null past its end or for an unknown log. */
  headAt: (log: string, count: number) => string | null;
  /** A torn last line is allowed (the session died mid-write); otherwise it is an issue. */
  tailAllowed: boolean;
}

const HEX64 = /^[0-9a-f]{64}$/;

export function checkCheckpoints(x: CheckpointExpectation): CheckpointsResult {
  const issues: CheckpointIssue[] = [];
  const keyids = new Set<string>();
  const split = splitNdjson(x.bytes, x.maxLines);
  if (split === null) return { issues: [{ code: "checkpoint_invalid", message: `more than ${x.maxLines} checkpoints` }], valid: 0, covered: null, keyids: [] };
  if (split.tail.length > 0 && !x.tailAllowed) issues.push({ code: "checkpoint_partial_tail", message: `${split.tail.length} bytes after the last checkpoint line` });
  let covered: Record<string, ChainHead> | null = null;
  let valid = 0;
  for (let i = 0; i < split.lines.length; i++) {
    const where = `checkpoint line ${i + 1}: `;
    const parsed = parseStrictJson(split.lines[i]!, { maxDepth: 8 });
    if (!parsed.ok) {
      issues.push({ code: "checkpoint_invalid", message: `${where}${parsed.message}` });
      break;
    }
    const check = verifyEnvelope(parsed.value, x.trusted, CHECKPOINT_PAYLOAD_TYPE);
    if (!check.ok) {
      issues.push({ code: check.code === "envelope_invalid" ? "checkpoint_invalid" : check.code, message: `${where}${check.message}` });
      break;
    }
    const payload = parseStrictJson(check.payload, { maxDepth: 8 });
    const problem = payload.ok ? payloadProblem(payload.value, x, i, covered) : payload.message;
    if (problem !== null) {
      issues.push({ code: problem.startsWith("head") ? "checkpoint_mismatch" : "checkpoint_invalid", message: `${where}${problem}` });
      break;
    }
    keyids.add(check.keyid);
    covered = (payload as { value: { logs: Record<string, ChainHead> } }).value.logs;
    valid++;
  }
  return { issues, valid, covered, keyids: [...keyids] };
}

/** Null when the payload is checkpoint number `n` of this session and agrees with the chains. */
function payloadProblem(value: unknown, x: CheckpointExpectation, n: number, before: Record<string, ChainHead> | null): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "payload is not an object";
  const p = value as Record<string, unknown>;
  const members = ["_type", "event_source", "session_id", "checkpoint", "time", "logs"];
  for (const k of Object.keys(p)) if (!members.includes(k)) return `payload has an unexpected member ${JSON.stringify(k)}`;
  if (p._type !== CHECKPOINT_TYPE) return `payload is not a ${CHECKPOINT_TYPE}`;
  if (p.session_id !== x.sessionId) return "payload belongs to another session";
  if (p.event_source !== x.eventSource) return "payload names another event source";
  if (p.checkpoint !== n) return `checkpoint ${JSON.stringify(p.checkpoint)}, expected ${n}`;
  if (typeof p.time !== "string" || p.time.length > 64) return "payload time is not a timestamp";
  if (typeof p.logs !== "object" || p.logs === null || Array.isArray(p.logs)) return "payload logs is not an object";
  const logs = p.logs as Record<string, unknown>;
  if (Object.keys(logs).length > 16) return "payload names too many logs";
  for (const [name, h] of Object.entries(logs)) {
    const head = h as Partial<ChainHead>;
    if (typeof head !== "object" || head === null || !Number.isSafeInteger(head.count) || (head.count as number) < 0 || typeof head.head !== "string" || !HEX64.test(head.head)) {
      return `payload logs.${name} is not {count, head}`;
    }
    const earlier = before?.[name];
    if (earlier !== undefined && (head.count as number) < earlier.count) return `payload logs.${name} count goes down (${head.count} after ${earlier.count})`;
    const actual = x.headAt(name, head.count as number);
    if (actual === null) return `head of ${name} names ${head.count} records, but the log has fewer (or is not part of this session)`;
    if (actual !== head.head) return `head of ${name} at ${head.count} records differs from the log's chain`;
  }
  for (const name of Object.keys(before ?? {})) if (!(name in logs)) return `payload no longer names ${name}`;
  return null;
}
