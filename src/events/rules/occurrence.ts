/**
 * The one check an arriving occurrence passes before anything else touches it (serve.md §6
 * item 11): poll pages and push notifications both come through here, once, at the loop's
 * boundary. What fails is skipped and reported as a `gap` (`invalid_event`), and the cursor moves
 * past it: no single occurrence can wedge a subscription.
 *
 * The work is bounded: one iterative walk (an explicit stack, no recursion) that stops at the
 * first problem, so a 60,000-level nesting costs 65 steps, not a stack overflow later in
 * JSON.stringify. The caps are those of what we store: an eventId goes into the persisted dedup
 * window (snapshot.ts), a cursor into the snapshot, a name into frames and the prompt, and the whole
 * occurrence into one `mcp_event` frame: one too large for a frame is an `oversized` gap instead
 * (issue 11), so what the model is given is always what clients and the transcript have too.
 */
import { sha256Hex } from "../../shared/digest.ts";
import { MAX_FRAME_BYTES } from "../../shared/frame-cap.ts";
import { isRecord } from "../../shared/guards.ts";
import type { EventOccurrence } from "../types.ts";

/** Bounds of an accepted occurrence (characters are UTF-16 code units). */
export const OCCURRENCE_LIMITS = {
  /** = the snapshot's dedup-window entry bound (SNAPSHOT_LIMITS.eventIdChars). */
  eventIdChars: 1024,
  /** = an event name in the config (EVENTS_CONFIG_LIMITS.eventNameChars). */
  nameChars: 256,
  /** An ISO 8601 time is ~30 characters; this leaves room for odd but honest formats. */
  timestampChars: 256,
  /** = the snapshot's cursor bound (SNAPSHOT_LIMITS.cursorChars). */
  cursorChars: 65_536,
  /** Nested objects and arrays, counting the occurrence itself as level 1 (its `data` as 2). */
  depth: 64,
  /** An eventId quoted in a gap notice is cut to this many characters (then "…"). */
  reportedIdChars: 256,
  /**
   * The occurrence as JSON (UTF-8 bytes): half the frame cap, 4 MiB. The rest of its `mcp_event`
   * frame (server, name, arguments: a key of at most 65,536 characters, ≤ 384 KiB even escaped)
   * and the record's seq and time then always fit; the 32 MiB message cap alone would not.
   */
  eventBytes: MAX_FRAME_BYTES / 2,
} as const;

const L = OCCURRENCE_LIMITS;

export type OccurrenceCheck =
  | { ok: true; occurrence: EventOccurrence }
  | {
      ok: false;
      /** The gap to report: `oversized` when only its size is wrong, else `invalid_event`. */
      reason: "invalid_event" | "oversized";
      /** One line naming the problem, never the value. */
      problem: string;
      /** The eventId as it may be shown (truncated, well-formed), or null when there was none to read. */
      eventId: string | null;
      /** What marks this occurrence as already reported (the dedup window holds it), or null when it has no id. */
      seenKey: string | null;
    };

/** Checks one occurrence as decoded from the wire (poll `events[i]`, or push params without `_meta`). */
export function checkOccurrence(raw: unknown): OccurrenceCheck {
  if (!isRecord(raw)) return invalid("the event is not a JSON object", undefined);
  const id = raw.eventId;
  const problem =
    identifierProblem("eventId", id, L.eventIdChars, true) ??
    identifierProblem("name", raw.name, L.nameChars, true) ??
    identifierProblem("timestamp", raw.timestamp, L.timestampChars, false) ??
    cursorProblem(raw.cursor) ??
    valueProblem(raw);
  if (problem !== null) return invalid(problem, id);
  // Depth and numbers are checked, so this serialization is bounded and exact (what a frame holds).
  const bytes = Buffer.byteLength(JSON.stringify(raw));
  if (bytes > L.eventBytes) return invalid(`the event is ${bytes} bytes as JSON (at most ${L.eventBytes} fit in a frame)`, id, "oversized");
  return { ok: true, occurrence: raw as EventOccurrence };
}

/** A cursor we can store and send back: a string within the snapshot's bound. */
export function isStorableCursor(cursor: unknown): cursor is string {
  return typeof cursor === "string" && cursor.length <= L.cursorChars;
}

/** An eventId as a notice may quote it: well-formed, cut to `reportedIdChars`; null when it is not a string. */
export function reportableEventId(id: unknown): string | null {
  if (typeof id !== "string") return null;
  const shown = id.length > L.reportedIdChars ? `${id.slice(0, L.reportedIdChars)}…` : id;
  return shown.toWellFormed();
}

/**
 * The dedup-window entry that says "this occurrence was already reported". A valid-looking id is
 * its own key (a later copy is the same event). Any other string maps to a key no accepted
 * eventId can equal: a lone surrogate (accepted ids are well-formed) and a bounded fingerprint.
 */
export function seenKeyOf(id: unknown): string | null {
  if (typeof id !== "string") return null;
  if (id.length > 0 && id.length <= L.eventIdChars && id.isWellFormed()) return id;
  // toWellFormed: hashing a lone surrogate would go through U+FFFD anyway; the length keeps them apart.
  return `\udfff${id.length}:${sha256Hex(id.toWellFormed())}`;
}

function invalid(problem: string, id: unknown, reason: "invalid_event" | "oversized" = "invalid_event"): OccurrenceCheck {
  return { ok: false, reason, problem, eventId: reportableEventId(id), seenKey: seenKeyOf(id) };
}

function identifierProblem(field: string, value: unknown, max: number, required: boolean): string | null {
  if (value === undefined && !required) return null;
  if (typeof value !== "string") return value === undefined ? `the event has no ${field}` : `the event's ${field} is not a string`;
  if (value.length === 0 && required) return `the event's ${field} is empty`;
  if (value.length > max) return `the event's ${field} is ${value.length} characters long (at most ${max})`;
  if (!value.isWellFormed()) return `the event's ${field} is not valid Unicode (a lone surrogate)`;
  return null;
}

function cursorProblem(cursor: unknown): string | null {
  if (cursor === undefined || cursor === null) return null;
  if (typeof cursor !== "string") return "the event's cursor is neither a string nor null";
  if (cursor.length > L.cursorChars) return `the event's cursor is ${cursor.length} characters long (at most ${L.cursorChars})`;
  return null;
}

/**
 * Depth and numbers of the whole occurrence, iteratively. JSON.parse turns `1e400` into Infinity,
 * which JSON.stringify would silently store as null and canonical JSON refuses: such an event
 * cannot be kept as sent.
 */
export function valueProblem(root: unknown, what = "the event", maxDepth: number = L.depth): string | null {
  const stack: { value: unknown; depth: number }[] = [{ value: root, depth: 1 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value, depth } = item;
    if (typeof value === "number") {
      if (!Number.isFinite(value)) return `${what} holds a number JSON cannot represent (NaN or ±Infinity)`;
      continue;
    }
    if (typeof value !== "object" || value === null) continue;
    if (depth > maxDepth) return `${what} is nested deeper than ${maxDepth} levels`;
    const children = Array.isArray(value) ? value : Object.values(value);
    for (const child of children) if (typeof child === "object" || typeof child === "number") stack.push({ value: child, depth: depth + 1 });
  }
  return null;
}
