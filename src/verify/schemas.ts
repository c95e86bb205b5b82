/**
 * The v1 and v2 record shapes as the reader accepts them (strict: an unknown member means the record
 * was not written by this format's producer). They mirror src/evidence/records.ts.
 */
import * as v from "valibot";

export const Hex64 = v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, "expected 64 lowercase hex digits"));
export const NonNegInt = v.pipe(v.number(), v.integer(), v.minValue(0));
export const Text = v.pipe(v.string(), v.maxLength(4096));

export function envelope<T extends v.GenericSchema>(data: T) {
  return v.strictObject({
    specversion: v.string(),
    type: v.string(),
    source: Text,
    id: Text,
    time: Text,
    datacontenttype: v.literal("application/json"),
    subject: v.optional(Text),
    data,
  });
}

const Info = v.nullable(v.strictObject({ name: Text, version: Text }));

export const ContextData = v.strictObject({
  session_id: Text,
  server_id: Text,
  server_pid: NonNegInt,
  event_source: Text,
  started_at: Text,
  vigil_version: Text,
  command_sha256: Hex64,
  policy_digest: v.nullable(Text),
  dry_run: v.boolean(),
  protocol_version: v.nullable(Text),
  client_info: Info,
  server_info: Info,
  outputs: v.strictObject({
    decision_log: v.picklist(["new", "append", "absent"]),
    receipts: v.boolean(),
    session_stop: v.boolean(),
  }),
});

export const StopData = v.strictObject({
  session_id: Text,
  server_id: Text,
  server_pid: NonNegInt,
  session_context_id: v.nullable(Text),
  session_end: v.picklist(["client_closed", "server_exited", "proxy_signaled", "proxy_error"]),
  termination: v.picklist(["exited", "signaled", "unknown"]),
  exit_code: v.nullable(v.pipe(v.number(), v.integer())),
  signal: v.nullable(NonNegInt),
  core_dumped: v.nullable(v.boolean()),
  kill_requested: v.boolean(),
  decision_log: v.picklist(["complete", "incomplete", "temporary", "absent", "unknown"]),
  decision_events_written: v.nullable(NonNegInt),
  decision_events_dropped: v.nullable(NonNegInt),
  decision_prefix_sha256: v.nullable(Hex64),
  receipts: v.nullable(v.strictObject({ written: NonNegInt, dropped: NonNegInt, prefix_sha256: Hex64 })),
  counts: v.strictObject({
    client_messages: NonNegInt,
    server_messages: NonNegInt,
    rejected_frames: NonNegInt,
    server_garbage_lines: NonNegInt,
    oversized: NonNegInt,
  }),
  assertion_basis: v.literal("producer_observation"),
  non_claims: v.array(Text),
});

/** A log's chain as far as it was written: records, and the `vigilprev` of the next one. */
export const ChainHeadSchema = v.strictObject({ count: NonNegInt, head: Hex64 });
/** At most this many logs are named by a stop record, a predicate or a checkpoint. */
export const MAX_LOGS = 16;
export const ChainHeads = v.pipe(v.record(Text, ChainHeadSchema), v.check((r) => Object.keys(r).length <= MAX_LOGS, `more than ${MAX_LOGS} logs`));

/** v2: v1's members, then each log's chain head (`chains`) and the checkpoints written (null unsigned). */
export const StopDataV2 = v.strictObject({
  ...StopData.entries,
  chains: ChainHeads,
  checkpoints: v.nullable(v.strictObject({ written: NonNegInt })),
});

const FileEntry = v.strictObject({ bytes: NonNegInt, sha256: Hex64 });

export const Manifest = v.strictObject({
  format: v.string(),
  created_at: Text,
  event_source: Text,
  server_id: Text,
  session_id: v.nullable(Text),
  vigil: v.strictObject({ version: Text, binary_sha256: Hex64 }),
  command_sha256: Hex64,
  policy: v.nullable(v.strictObject({ digest: Text, sha256_of_file: Text })),
  files: v.record(v.string(), FileEntry),
});

export const StopRecord = envelope(StopData);
export const StopRecordV2 = envelope(StopDataV2);
export const ContextRecord = envelope(ContextData);

/** A stop record of either version; a v2 record's `data` also has `chains` and `checkpoints`. */
export type StopRecordT = v.InferOutput<typeof StopRecord> | v.InferOutput<typeof StopRecordV2>;
export type StopRecordV2T = v.InferOutput<typeof StopRecordV2>;
export type ContextRecordT = v.InferOutput<typeof ContextRecord>;
export type ManifestT = v.InferOutput<typeof Manifest>;

/** The first issue of a failed parse, as "path: message". */
export function firstIssue(issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0];
  if (!issue) return "invalid";
  const path = v.getDotPath(issue);
  return path ? `${path}: ${issue.message}` : issue.message;
}
