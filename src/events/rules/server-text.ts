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
import { isRecord } from "../../shared/guards.ts";

export const SERVER_TEXT_LIMITS = {
  /** One string (UTF-16 code units), then "…". */
  textChars: 1024,
  /** `data` of an error, as JSON; past this it is replaced by a note of its size. */
  dataJsonChars: 16_384,
  /** Containers nested deeper than this are replaced by a note (the scrubber stops at 64 too). */
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
 * A copy of a JSON-like value with every string (object keys too) cut by `boundText`, iteratively.
 * A value whose copy is still over `dataJsonChars` as JSON is replaced by a string saying so.
 */
export function boundValue(value: unknown): unknown {
  const root: { value?: unknown } = {};
  let visited = 0;
  const work: { source: unknown; depth: number; put: (v: unknown) => void }[] = [{ source: value, depth: 0, put: (v) => (root.value = v) }];
  for (let task = work.pop(); task !== undefined; task = work.pop()) {
    const { source, depth, put } = task;
    if (typeof source === "string") put(boundText(source));
    else if (typeof source !== "object" || source === null) put(source);
    else if (depth >= L.depth) put(`(nested deeper than ${L.depth} levels)`);
    else if ((visited += Array.isArray(source) ? source.length : Object.keys(source).length) > L.nodes) {
      // Charged before anything is queued, so the work is bounded whatever the input.
      return `(more than ${L.nodes} values, left out)`;
    } else if (Array.isArray(source)) {
      const out: unknown[] = new Array(source.length);
      put(out);
      source.forEach((item, i) => work.push({ source: item, depth: depth + 1, put: (v) => (out[i] = v) }));
    } else if (isRecord(source)) {
      const out: Record<string, unknown> = {};
      put(out);
      for (const [key, item] of Object.entries(source)) {
        const name = boundText(key);
        // Defined now (key order is kept), and defined, not assigned: a `__proto__` key stays a plain member.
        define(out, name, undefined);
        work.push({ source: item, depth: depth + 1, put: (v) => define(out, name, v) });
      }
    } else put(String(source));
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(root.value);
  } catch {
    return "(not representable as JSON)";
  }
  if (json !== undefined && json.length > L.dataJsonChars) return `(${json.length} characters of JSON, left out: at most ${L.dataJsonChars} are kept)`;
  return root.value;
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
