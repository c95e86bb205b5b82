/**
 * The events snapshot `mcp-events.json` (serve.md §3): small, rewritten whole, never holds events.
 *
 *   {"version":"vigil.mcp-events.v1","subscriptions":{<key>:{cursor,recent,runtime?}},"last_client_ms":n|null}
 *
 * It is validated on load, strictly (an unknown key is refused rather than dropped, so a rewrite
 * cannot lose what a newer version stored) and within bounds (the file is read whole). A snapshot
 * that fails validation is an error for the caller: starting empty instead would forget cursors,
 * dedup windows and runtime subscriptions without a word. The same schema checks every record
 * before it is stored, so we never write a snapshot we would refuse to read back.
 */
import { join } from "node:path";
import * as v from "valibot";
import { MCP_SERVER_LIMITS } from "../../mcp/server-config.ts";
import { isRecord } from "../../shared/guards.ts";
import { errorMessage } from "../../shared/errors.ts";
import { formatIssue } from "../../shared/issues.ts";
import { readSmallFile } from "../../shared/durable/atomic-file.ts";
import { isStateError } from "../../shared/durable/state-error.ts";
import { EVENTS_CONFIG_LIMITS, EVENT_ACTIONS, EVENT_DELIVERIES } from "../config.ts";
import type { SubscriptionSpec } from "../types.ts";
import { EventsStoreError } from "./errors.ts";
import { EVENTS_SNAPSHOT_FILE } from "./files.ts";

export const SNAPSHOT_VERSION = "vigil.mcp-events.v1";

/** Bounds of the snapshot (characters are UTF-16 code units). */
export const SNAPSHOT_LIMITS = {
  /** Checked before the file is read. */
  fileBytes: 64 * 1024 * 1024,
  subscriptions: 10_000,
  keyChars: 65_536,
  cursorChars: 65_536,
  /** The dedup window: newest `recent` event ids kept per subscription. */
  recent: 1024,
  eventIdChars: 1024,
} as const;

export interface SubscriptionRecord {
  cursor: string | null;
  /** Dedup window, oldest first. */
  recent: string[];
  /** Present for runtime subscriptions (mcp_events_subscribe), which are restored at boot. */
  runtime?: SubscriptionSpec;
}

export interface SnapshotData {
  subscriptions: Record<string, SubscriptionRecord>;
  last_client_ms: number | null;
}

// valibot's record() silently drops these keys; refuse them so nothing disappears unseen.
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const SERVER_NAME = /^[A-Za-z0-9_-]+$/;

function text(max: number, min = 0) {
  return v.pipe(
    v.string("expected a string"),
    v.minLength(min, "expected a non-empty string"),
    v.maxLength(max, `expected at most ${max} characters`),
  );
}

function integer(min: number) {
  const expected = `expected an integer of at least ${min}`;
  return v.pipe(v.number(expected), v.safeInteger(expected), v.minValue(min, expected));
}

const SpecSchema = v.pipe(
  v.custom<unknown>(isRecord, "expected an object"),
  v.strictObject({
    server: v.pipe(text(MCP_SERVER_LIMITS.serverNameChars, 1), v.regex(SERVER_NAME, "expected a server name")),
    name: text(EVENTS_CONFIG_LIMITS.eventNameChars, 1),
    arguments: v.custom<Record<string, unknown>>(isRecord, "expected an object"),
    delivery: v.optional(v.picklist(EVENT_DELIVERIES, 'expected "poll" | "push" | "webhook"')),
    action: v.picklist(EVENT_ACTIONS, 'expected "notify" | "follow_up" | "steer"'),
    instructions: v.optional(text(EVENTS_CONFIG_LIMITS.instructionsChars)),
    max_age_ms: v.optional(integer(1)),
  }),
);

export const RecordSchema = v.pipe(
  v.custom<unknown>(isRecord, "expected an object"),
  v.strictObject({
    cursor: v.nullable(text(SNAPSHOT_LIMITS.cursorChars)),
    recent: v.pipe(
      v.array(text(SNAPSHOT_LIMITS.eventIdChars), "expected an array of event ids"),
      v.maxLength(SNAPSHOT_LIMITS.recent, `expected at most ${SNAPSHOT_LIMITS.recent} event ids`),
    ),
    runtime: v.optional(SpecSchema),
  }),
);

const SubscriptionsSchema = v.pipe(
  v.custom<Record<string, unknown>>(isRecord, "expected an object"),
  // Counted and screened before the entries are validated, so a huge map is refused cheaply.
  v.check((m) => Object.keys(m).length <= SNAPSHOT_LIMITS.subscriptions, `expected at most ${SNAPSHOT_LIMITS.subscriptions} subscriptions`),
  v.check((m) => Object.keys(m).every((k) => !RESERVED_KEYS.has(k)), "a subscription key is not supported"),
  v.record(text(SNAPSHOT_LIMITS.keyChars, 1), RecordSchema),
);

const SnapshotSchema = v.pipe(
  v.custom<unknown>(isRecord, "expected a JSON object"),
  v.strictObject({
    version: v.literal(SNAPSHOT_VERSION, `expected version "${SNAPSHOT_VERSION}"`),
    subscriptions: SubscriptionsSchema,
    last_client_ms: v.nullable(integer(0)),
  }),
);

export function snapshotPath(dir: string): string {
  return join(dir, EVENTS_SNAPSHOT_FILE);
}

/** Problems of a subscription key, or null when it can be stored. */
export function keyProblem(key: string): string | null {
  if (typeof key !== "string" || key.length === 0 || key.length > SNAPSHOT_LIMITS.keyChars) {
    return `a subscription key must be a string of 1 to ${SNAPSHOT_LIMITS.keyChars} characters`;
  }
  return RESERVED_KEYS.has(key) ? `the subscription key ${JSON.stringify(key)} is not supported` : null;
}

/**
 * Why a runtime subscription with this key and spec could not be stored, or null when it can: the
 * check `mcp_events_subscribe` makes before anything is started, so a request we could never
 * persist is refused up front instead of running unstored (the answer names the problem).
 */
export function runtimeSpecProblem(key: string, spec: SubscriptionSpec): string | null {
  if (typeof key === "string" && key.length > SNAPSHOT_LIMITS.keyChars) {
    return `the subscription key (server, name and canonical arguments) is ${key.length} characters long; at most ${SNAPSHOT_LIMITS.keyChars} can be stored`;
  }
  const problem = keyProblem(key);
  if (problem !== null) return problem;
  const r = v.safeParse(RecordSchema, { cursor: null, recent: [], runtime: spec });
  return r.success ? null : `the subscription cannot be stored: ${describe(r.issues)}`;
}

/**
 * A private, validated copy of a record with `recent` trimmed to the newest entries; throws
 * invalid_argument naming the problem (never the value).
 */
export function copyRecord(record: SubscriptionRecord): SubscriptionRecord {
  let copy: unknown;
  try {
    // A JSON round trip is the copy that matches what a reload yields (undefined keys gone).
    copy = JSON.parse(JSON.stringify({ ...record, recent: record.recent.slice(-SNAPSHOT_LIMITS.recent) }));
  } catch (e) {
    throw new EventsStoreError("invalid_argument", `subscription record cannot be stored: ${errorMessage(e)}`, { cause: e });
  }
  const r = v.safeParse(RecordSchema, copy);
  if (!r.success) throw new EventsStoreError("invalid_argument", `subscription record cannot be stored: ${describe(r.issues)}`);
  return copy as SubscriptionRecord;
}

/** A copy for a caller, so nothing it does reaches the store's own record. */
export function cloneRecord(record: SubscriptionRecord): SubscriptionRecord {
  const out: SubscriptionRecord = { cursor: record.cursor, recent: record.recent.slice() };
  if (record.runtime !== undefined) out.runtime = structuredClone(record.runtime);
  return out;
}

export function serializeSnapshot(subscriptions: ReadonlyMap<string, SubscriptionRecord>, lastClientMs: number | null): string {
  const subs: Record<string, SubscriptionRecord> = {};
  for (const [key, record] of subscriptions) subs[key] = record;
  return `${JSON.stringify({ version: SNAPSHOT_VERSION, subscriptions: subs, last_client_ms: lastClientMs })}\n`;
}

/** Reads and validates the snapshot; undefined when there is none. Throws EventsStoreError naming the file. */
export function readSnapshotFile(dir: string): SnapshotData | undefined {
  const path = snapshotPath(dir);
  let bytes: Buffer | null;
  try {
    bytes = readSmallFile(path, SNAPSHOT_LIMITS.fileBytes);
  } catch (e) {
    const why = isStateError(e) ? e.message : `cannot read ${path}: ${errorMessage(e)}`;
    throw new EventsStoreError("file_refused", `events snapshot refused: ${why}`, { cause: e });
  }
  if (bytes === null) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw invalid(path, "it is not valid JSON");
  }
  const r = v.safeParse(SnapshotSchema, json);
  if (!r.success) throw invalid(path, describe(r.issues));
  return { subscriptions: r.output.subscriptions as Record<string, SubscriptionRecord>, last_client_ms: r.output.last_client_ms };
}

function invalid(path: string, why: string): EventsStoreError {
  return new EventsStoreError(
    "snapshot_invalid",
    `events snapshot ${path} is invalid (${why}); it was left untouched: fix or remove it to start this session's events state afresh`,
  );
}

function describe(issues: readonly v.BaseIssue<unknown>[]): string {
  const shown = issues.slice(0, 3).map(formatIssue).join("; ");
  return issues.length > 3 ? `${shown}; and ${issues.length - 3} more` : shown;
}
