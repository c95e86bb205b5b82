/**
 * Bounds on what an MCP server says about its events that is not an event: the messages and
 * `data` of its JSON-RPC errors (events/* answers, `notifications/events/error` and `terminated`),
 * a stream's end reason, the names it lists. They reach status frames, `last_error`, log lines and
 * the model's gap notices; a server may make them any size the message cap allows (32 MiB), which
 * would not even fit a frame. So each string is cut once, where it enters (wire/server-events.ts,
 * after the secrets are scrubbed — cutting first could leave a secret's head behind).
 *
 * Events themselves are not cut here: they are delivered verbatim or not at all (rules/occurrence.ts).
 */
import { mapStrings } from "../../shared/map-strings.ts";

export const SERVER_TEXT_LIMITS = {
  /** One string (UTF-16 code units), then "…". */
  textChars: 1024,
  /** `data` of an error, as JSON; past this it is replaced by a note of its size. */
  dataJsonChars: 16_384,
  /** Containers nested deeper than this are replaced by a note. */
  depth: 32,
  /** Values visited at most (far more than `dataJsonChars` can hold); past it the value is replaced. */
  nodes: 10_000,
} as const;

const L = SERVER_TEXT_LIMITS;

/** `text` cut to `textChars` and "…" (never inside a surrogate pair). */
export function boundText(text: string, max: number = L.textChars): string {
  if (text.length <= max) return text;
  // A cut between the halves of a pair leaves a lone surrogate: drop it rather than send it.
  return `${text.slice(0, max).toWellFormed().replace(/\uFFFD$/, "")}…`;
}

/**
 * A copy of a JSON-like value with every string (object keys too) passed through `text` (the
 * caller's scrubber) and then cut by `boundText`, in one bounded walk (shared/map-strings.ts). A
 * value whose copy is still over `dataJsonChars` as JSON is replaced by a string saying so.
 */
export function boundValue(value: unknown, text: (s: string) => string = (s) => s): unknown {
  const copy = mapStrings(value, (s) => boundText(text(s)), {
    maxDepth: L.depth,
    maxNodes: L.nodes,
    deep: `(nested deeper than ${L.depth} levels)`,
    tooMany: `(more than ${L.nodes} values, left out)`,
  });
  let json: string | undefined;
  try {
    json = JSON.stringify(copy);
  } catch {
    return "(not representable as JSON)";
  }
  if (json !== undefined && json.length > L.dataJsonChars) return `(${json.length} characters of JSON, left out: at most ${L.dataJsonChars} are kept)`;
  return copy;
}
