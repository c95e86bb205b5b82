/**
 * A private copy of a JSON value that is exactly what `JSON.parse(JSON.stringify(value))` yields,
 * made without the text: the pending queue keeps such a copy of every event it takes (the add line
 * read back was the copy), and parsing each line back cost more than anything else in accepting an
 * event (issue 16; bench/events/hotpath.ts).
 *
 * Only plain data is copied this way — objects whose prototype is Object.prototype (or null) with
 * no `toJSON`, arrays, strings, booleans, null and finite numbers (-0 becomes 0, as in JSON);
 * `undefined` members are left out, as JSON does. Anything else (a class instance, a function, a
 * non-finite number, a `__proto__` key, nesting deeper than MAX_DEPTH) answers NOT_PLAIN, and the
 * caller takes the JSON round trip, which knows every rule.
 */

export const NOT_PLAIN: unique symbol = Symbol("not plain JSON data");

/** Deeper than this the copy gives up (the caller's JSON round trip decides). Accepted events are ≤ 64 levels. */
const MAX_DEPTH = 128;

export function plainJsonCopy(value: unknown): unknown {
  return copy(value, 0);
}

function copy(v: unknown, depth: number): unknown {
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : NOT_PLAIN;
    case "object":
      break;
    default:
      return NOT_PLAIN;
  }
  if (v === null) return null;
  if (depth >= MAX_DEPTH) return NOT_PLAIN;
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype || "toJSON" in v) return NOT_PLAIN;
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      // JSON writes a hole or an undefined element as null.
      const c = x === undefined ? null : copy(x, depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      out[i] = c;
    }
    return out;
  }
  const proto = Object.getPrototypeOf(v);
  if ((proto !== Object.prototype && proto !== null) || "toJSON" in v) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  // Object.keys lists what JSON.stringify writes (own enumerable string keys), in its order.
  for (const k of Object.keys(v)) {
    if (k === "__proto__") return NOT_PLAIN;
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined) continue;
    const c = copy(x, depth + 1);
    if (c === NOT_PLAIN) return NOT_PLAIN;
    out[k] = c;
  }
  return out;
}
