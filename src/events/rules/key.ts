/**
 * The identity of a subscription: server, event name and arguments. Arguments go in canonical JSON
 * so that `{a,b}` and `{b,a}` are one subscription. NUL separates the parts because neither a
 * configured server name nor an event name may contain it, and canonical JSON escapes it.
 */
import { canonicalJson } from "../../shared/canonical-json.ts";

const SEPARATOR = "\0";

export function subscriptionKey(server: string, name: string, args: Record<string, unknown>): string {
  return `${server}${SEPARATOR}${name}${SEPARATOR}${canonicalJson(args)}`;
}

export interface SubscriptionKeyParts {
  server: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** The parts of a key made by subscriptionKey; null for anything else (persisted keys are untrusted). */
export function parseSubscriptionKey(key: string): SubscriptionKeyParts | null {
  if (typeof key !== "string") return null;
  const first = key.indexOf(SEPARATOR);
  // Canonical JSON escapes NUL, so the last separator is the one before the arguments.
  const second = key.lastIndexOf(SEPARATOR);
  if (first < 0 || second <= first) return null;
  let args: unknown;
  try {
    args = JSON.parse(key.slice(second + 1));
  } catch {
    return null;
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) return null;
  return { server: key.slice(0, first), name: key.slice(first + 1, second), arguments: args as Record<string, unknown> };
}
