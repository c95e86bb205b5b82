/**
 * A transcript record's JSON text and object from a frame, its seq and time (transcript.ts): the
 * text is `{"seq":N,"time":"…","type":"…",…the frame's other keys in order}` and the record object
 * has the frame's keys (its own `seq`/`time` replaced) then `seq`, `time`.
 *
 * Every frame builder (protocol/frames.ts) makes `type` the first key and gives no `seq`/`time`:
 * then the frame's own JSON text, after `{`, is already the record's tail, and one copy makes the
 * record. Any other shape (a `seq`/`time` to replace, `type` not first) takes the general path,
 * which moves `type` first and drops them. Both give the same text for such a frame; a frame that
 * cannot be serialized (a cycle, a BigInt) throws from JSON.stringify either way.
 */
import type { Frame, TranscriptRecord } from "./transcript-types.ts";

export function recordJson(seq: number, time: string, frame: Frame): { json: string; record: TranscriptRecord } {
  const head = `{"seq":${seq},"time":${JSON.stringify(time)},`;
  if (builderShaped(frame)) return { json: head + JSON.stringify(frame).slice(1), record: { ...frame, seq, time } };
  const { seq: _seq, time: _time, type, ...rest } = frame;
  const body = JSON.stringify(rest);
  return { json: `${head}"type":${JSON.stringify(type)}${body === "{}" ? "}" : `,${body.slice(1)}`}`, record: { type, ...rest, seq, time } as TranscriptRecord };
}

/** `type` is the first key JSON.stringify writes, and there is no `seq` or `time` to replace. */
function builderShaped(frame: Frame): boolean {
  if ("seq" in frame || "time" in frame || "toJSON" in frame) return false;
  for (const key in frame) return key === "type";
  return false;
}
