/**
 * The events snapshot `mcp-events.json` (serve.md §3): small, rewritten whole, never holds events.
 *
 *   {"version":"vigil.mcp-events.v3","position":N,"subscriptions":{<key>:{cursor,recent,runtime?,webhook?}},
 *    "server_keys"?:{<origin>:[x,…]},"last_client_ms":n|null}
 *
 * v2 adds a subscription's webhook callback (token and the last confirmed secrets, so a delivery
 * retried across a crash still verifies: events design notes §3.1, §4.4) and the v1a keys seen per
 * server origin (§4.6). v3 adds `position`: the snapshot is a checkpoint, and the pending log's
 * `position` records above N (cursors and dedup-window ids of later pages) are applied on top of
 * it at load (positions.ts). v3 is written; v2 and v1 (position 0: nothing to apply but what the
 * log holds) are still read. A binary older than v3 refuses a v3 file rather than miss the log's
 * positions.
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
import type { WebhookRecord } from "../webhook/types.ts";
import { EventsStoreError } from "./errors.ts";
import { EVENTS_SNAPSHOT_FILE } from "./files.ts";

export const SNAPSHOT_VERSION = "vigil.mcp-events.v3";
/** The version before positions in the log: still read (position 0). */
export const SNAPSHOT_VERSION_V2 = "vigil.mcp-events.v2";
/** The version before webhook delivery: still read (it holds no `webhook` and no `server_keys`). */
export const SNAPSHOT_VERSION_V1 = "vigil.mcp-events.v1";

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
  /** A `whsec_` secret (32 bytes are 50 characters; the draft allows up to 64 bytes). */
  secretChars: 128,
  subscriptionIdChars: 1024,
  refreshBeforeChars: 64,
  /** `server_keys`: origins, keys per origin, characters of one base64url key (32 bytes are 43). */
  keyOrigins: 1024,
  originChars: 2048,
  keysPerOrigin: 64,
  serverKeyChars: 64,
} as const;

export interface SubscriptionRecord {
  cursor: string | null;
  /** Dedup window, oldest first. */
  recent: string[];
  /** Present for runtime subscriptions (mcp_events_subscribe), which are restored at boot. */
  runtime?: SubscriptionSpec;
  /** Present for a webhook subscription: its callback token and secrets (v2). */
  webhook?: WebhookRecord;
}

/** base64url `x` values of the Ed25519 keys seen per MCP server origin (only ever growing). */
export type ServerKeysData = Record<string, string[]>;

export interface SnapshotData {
  /** The highest pending-log position record it covers (0 before v3). */
  position: number;
  subscriptions: Record<string, SubscriptionRecord>;
  server_keys: ServerKeysData;
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

// Messages name what was expected, never the value: a secret must not reach an error or a log.
const SECRET = v.pipe(
  v.string("expected a whsec_ secret"),
  v.maxLength(SNAPSHOT_LIMITS.secretChars, `expected a whsec_ secret of at most ${SNAPSHOT_LIMITS.secretChars} characters`),
  v.regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, "expected a whsec_ secret (whsec_ and base64)"),
);

const WebhookSchema = v.pipe(
  v.custom<unknown>(isRecord, "expected an object"),
  v.strictObject({
    token: v.pipe(v.string("expected a route token"), v.regex(/^[0-9a-f]{32}$/, "expected a route token of 32 lowercase hex digits")),
    secret: SECRET,
    previous: v.nullable(SECRET),
    pending: v.optional(SECRET),
    subscription_id: v.nullable(text(SNAPSHOT_LIMITS.subscriptionIdChars)),
    refresh_before: v.nullable(text(SNAPSHOT_LIMITS.refreshBeforeChars)),
  }),
);

const RECORD_V1_ENTRIES = {
  cursor: v.nullable(text(SNAPSHOT_LIMITS.cursorChars)),
  recent: v.pipe(
    v.array(text(SNAPSHOT_LIMITS.eventIdChars), "expected an array of event ids"),
    v.maxLength(SNAPSHOT_LIMITS.recent, `expected at most ${SNAPSHOT_LIMITS.recent} event ids`),
  ),
  runtime: v.optional(SpecSchema),
};

/** A v2 record; its output lists the keys in this order, which is the order we write. */
export const RecordSchema = v.pipe(
  v.custom<unknown>(isRecord, "expected an object"),
  v.strictObject({ ...RECORD_V1_ENTRIES, webhook: v.optional(WebhookSchema) }),
);

const RecordV1Schema = v.pipe(v.custom<unknown>(isRecord, "expected an object"), v.strictObject(RECORD_V1_ENTRIES));

function keyedMap<T extends v.GenericSchema>(max: number, what: string, keyChars: number, entry: T) {
  return v.pipe(
    v.custom<Record<string, unknown>>(isRecord, "expected an object"),
    // Counted and screened before the entries are validated, so a huge map is refused cheaply.
    v.check((m) => Object.keys(m).length <= max, `expected at most ${max} ${what}s`),
    v.check((m) => Object.keys(m).every((k) => !RESERVED_KEYS.has(k)), `a ${what} key is not supported`),
    v.record(text(keyChars, 1), entry),
  );
}

const ServerKeysSchema = keyedMap(
  SNAPSHOT_LIMITS.keyOrigins,
  "server origin",
  SNAPSHOT_LIMITS.originChars,
  v.pipe(
    v.array(
      v.pipe(
        text(SNAPSHOT_LIMITS.serverKeyChars, 1),
        v.regex(/^[A-Za-z0-9_-]+$/, "expected a base64url key"),
      ),
      "expected an array of base64url keys",
    ),
    v.maxLength(SNAPSHOT_LIMITS.keysPerOrigin, `expected at most ${SNAPSHOT_LIMITS.keysPerOrigin} keys per origin`),
  ),
);

const V2_ENTRIES = {
  subscriptions: keyedMap(SNAPSHOT_LIMITS.subscriptions, "subscription", SNAPSHOT_LIMITS.keyChars, RecordSchema),
  server_keys: v.optional(ServerKeysSchema),
  last_client_ms: v.nullable(integer(0)),
};

const SnapshotV3Schema = v.pipe(
  v.custom<unknown>(isRecord, "expected a JSON object"),
  v.strictObject({
    version: v.literal(SNAPSHOT_VERSION, `expected version "${SNAPSHOT_VERSION}" (or "${SNAPSHOT_VERSION_V2}", "${SNAPSHOT_VERSION_V1}")`),
    position: integer(0),
    ...V2_ENTRIES,
  }),
);

const SnapshotV2Schema = v.pipe(
  v.custom<unknown>(isRecord, "expected a JSON object"),
  v.strictObject({ version: v.literal(SNAPSHOT_VERSION_V2), ...V2_ENTRIES }),
);

const SnapshotV1Schema = v.pipe(
  v.custom<unknown>(isRecord, "expected a JSON object"),
  v.strictObject({
    version: v.literal(SNAPSHOT_VERSION_V1),
    subscriptions: keyedMap(SNAPSHOT_LIMITS.subscriptions, "subscription", SNAPSHOT_LIMITS.keyChars, RecordV1Schema),
    last_client_ms: v.nullable(integer(0)),
  }),
);

/** Why these server keys could not be stored, or null (the snapshot's own bounds). */
export function serverKeysProblem(keys: ServerKeysData): string | null {
  const r = v.safeParse(ServerKeysSchema, keys);
  return r.success ? null : `server keys cannot be stored: ${describe(r.issues)}`;
}

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
 *
 * The store takes one per page of events (the dedup window changed, then the cursor moved), and
 * the window is the bulk of it: up to 1,024 ids, which a JSON round trip and a valibot pass per id
 * made the top cost of poll ingestion. A string's JSON round trip is the same string, so a window
 * of strings within the bound is checked and copied by one loop, and only the small rest of the
 * record takes the schema; a window that fails the loop takes the whole-record path, which names
 * the problem as before.
 */
export function copyRecord(record: SubscriptionRecord): SubscriptionRecord {
  const recent = recentCopy(record.recent);
  if (recent === null) return copyWholeRecord(record);
  const copy = copyWholeRecord({ ...record, recent: [] });
  copy.recent = recent; // the key is already in place: schema order is kept
  return copy;
}

/** The newest ids of a window as a private array, or null when it is not an array of strings within the bound. */
function recentCopy(recent: unknown): string[] | null {
  if (!Array.isArray(recent)) return null;
  const out = (recent as unknown[]).slice(-SNAPSHOT_LIMITS.recent);
  // for…of reads a hole as undefined: refused here, as JSON (null) and the schema would refuse it.
  for (const id of out) if (typeof id !== "string" || id.length > SNAPSHOT_LIMITS.eventIdChars) return null;
  return out as string[];
}

/** copyRecord by the JSON round trip and the schema alone (every field; the problem named). */
export function copyWholeRecord(record: SubscriptionRecord): SubscriptionRecord {
  let copy: unknown;
  try {
    // A JSON round trip is the copy that matches what a reload yields (undefined keys gone).
    copy = JSON.parse(JSON.stringify({ ...record, recent: record.recent.slice(-SNAPSHOT_LIMITS.recent) }));
  } catch (e) {
    throw new EventsStoreError("invalid_argument", `subscription record cannot be stored: ${errorMessage(e)}`, { cause: e });
  }
  const r = v.safeParse(RecordSchema, copy);
  if (!r.success) throw new EventsStoreError("invalid_argument", `subscription record cannot be stored: ${describe(r.issues)}`);
  // The parsed output lists keys in schema order: what a reload of the written file yields.
  return r.output as SubscriptionRecord;
}

/** A copy for a caller, so nothing it does reaches the store's own record. */
export function cloneRecord(record: SubscriptionRecord): SubscriptionRecord {
  const out: SubscriptionRecord = { cursor: record.cursor, recent: record.recent.slice() };
  if (record.runtime !== undefined) out.runtime = structuredClone(record.runtime);
  if (record.webhook !== undefined) out.webhook = { ...record.webhook };
  return out;
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
  if (isRecord(json) && json.version === SNAPSHOT_VERSION_V1) {
    const r = v.safeParse(SnapshotV1Schema, json);
    if (!r.success) throw invalid(path, describe(r.issues));
    return { position: 0, subscriptions: r.output.subscriptions as Record<string, SubscriptionRecord>, server_keys: {}, last_client_ms: r.output.last_client_ms };
  }
  const r = isRecord(json) && json.version === SNAPSHOT_VERSION_V2 ? v.safeParse(SnapshotV2Schema, json) : v.safeParse(SnapshotV3Schema, json);
  if (!r.success) throw invalid(path, describe(r.issues));
  return {
    position: "position" in r.output ? r.output.position : 0,
    subscriptions: r.output.subscriptions as Record<string, SubscriptionRecord>,
    server_keys: r.output.server_keys ?? {},
    last_client_ms: r.output.last_client_ms,
  };
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
