/**
 * The one bounded walk over a JSON-like value that rewrites its strings: a copy in which every
 * string, object keys included, is passed through `map`. The scrubber (scrub.ts) and the events
 * client's bounds on server text (events/rules/server-text.ts) are both this walk with another map.
 *
 * Iterative (an explicit stack, never recursion) and bounded: a container nested `maxDepth` deep
 * is replaced by `deep`, and one whose members do not fit the remaining node budget by `tooMany` —
 * members are charged when queued, so the work is bounded by `maxNodes` whatever the input. What is
 * beyond the bounds is replaced, never passed on unchecked.
 */

export interface MapStringsLimits {
  maxDepth: number;
  maxNodes: number;
  /** What stands for a container nested too deep. */
  deep: unknown;
  /** What stands for a container whose members exceed the node budget. */
  tooMany: unknown;
}

interface Task {
  source: unknown;
  depth: number;
  put: (value: unknown) => void;
}

export function mapStrings(input: unknown, map: (text: string) => string, limits: MapStringsLimits): unknown {
  let budget = limits.maxNodes - 1;
  const root: { value?: unknown } = {};
  const work: Task[] = [{ source: input, depth: 0, put: (v) => (root.value = v) }];
  for (let task = work.pop(); task !== undefined; task = work.pop()) {
    const { source, depth, put } = task;
    if (typeof source === "string") put(map(source));
    else if (typeof source !== "object" || source === null) put(source);
    else if (depth >= limits.maxDepth) put(limits.deep);
    else if (Array.isArray(source)) {
      if (source.length > budget) put(limits.tooMany);
      else {
        budget -= source.length;
        const out: unknown[] = new Array(source.length);
        put(out);
        for (let i = 0; i < source.length; i++) work.push({ source: source[i], depth: depth + 1, put: (v) => (out[i] = v) });
      }
    } else {
      const keys = Object.keys(source);
      if (keys.length > budget) put(limits.tooMany);
      else {
        budget -= keys.length;
        const out: Record<string, unknown> = {};
        put(out);
        for (const key of keys) {
          const name = map(key);
          // Defined, not assigned: a `__proto__` key stays a plain member. Defined now, so key order is kept.
          define(out, name, undefined);
          work.push({ source: (source as Record<string, unknown>)[key], depth: depth + 1, put: (v) => define(out, name, v) });
        }
      }
    }
  }
  return root.value;
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
