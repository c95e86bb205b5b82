/**
 * One transcript record made ready to write (transcript.ts): its seq, its JSON text (record-json.ts)
 * and its size as a line, with the checks an append makes before anything is written — a frame
 * without a string `type` or that cannot be serialized is `record_invalid`, a line over the record
 * cap is `record_too_large`. Both refuse that frame only; nothing is written for it.
 */
import { errorMessage } from "../../shared/errors.ts";
import { StateError } from "../../shared/durable/state-error.ts";
import { recordJson } from "./record-json.ts";
import type { Frame, TranscriptRecord } from "./transcript-types.ts";

export interface PreparedRecord {
  seq: number;
  type: string;
  record: TranscriptRecord;
  /** The line without its newline: exactly what clients are sent. */
  json: string;
  /** UTF-8 bytes of the line with its newline. */
  bytes: number;
}

/** What one frame of a batch became: its record, or why it was not stored. */
export type AppendOutcome = { seq: number; record: TranscriptRecord; json: string } | { error: unknown };

export function prepareRecord(seq: number, time: string, frame: Frame, maxRecordBytes: number): PreparedRecord {
  if (typeof frame.type !== "string") throw new StateError("record_invalid", "frame cannot be recorded: no string `type`");
  const type = frame.type;
  let made: { json: string; record: TranscriptRecord };
  try {
    made = recordJson(seq, time, frame);
  } catch (e) {
    throw new StateError("record_invalid", `frame cannot be recorded: ${errorMessage(e)}`, { cause: e });
  }
  const bytes = Buffer.byteLength(made.json) + 1;
  if (bytes > maxRecordBytes) throw new StateError("record_too_large", `record of ${bytes} bytes is over the ${maxRecordBytes}-byte cap`);
  return { seq, type, record: made.record, json: made.json, bytes };
}

/** The lines of records bound for one segment, as the one buffer a single write(2) takes. */
export function linesBuffer(records: readonly PreparedRecord[]): Buffer {
  if (records.length === 1) return Buffer.from(`${records[0]!.json}\n`);
  let text = "";
  for (const r of records) text += `${r.json}\n`;
  return Buffer.from(text);
}
