/**
 * Whether a subscription could be stored at all: the one check for both ways a subscription is
 * asked for (issue 11). `mcp_events_subscribe` answers `invalid_params` with it before anything is
 * started or registered (hub-commands.ts); a configured subscription is refused at config load with
 * it (serve's config schema plugs in `StorableSubscriptions`), instead of failing its first
 * snapshot write and every one after.
 *
 * What it checks is what the snapshot will check when it writes the record (store/snapshot.ts):
 * arguments that are plain JSON within the nesting bound (the key is their canonical JSON, built
 * recursively), a key of at most 65,536 characters, and the spec within the stored record's schema.
 * Kept apart from config.ts, which the snapshot's schema imports (no import cycle).
 */
import * as v from "valibot";
import type { EventSubscriptionConfig } from "./config.ts";
import { subscriptionKey } from "./rules/key.ts";
import { valueProblem } from "./rules/occurrence.ts";
import { runtimeSpecProblem } from "./store/snapshot.ts";
import type { SubscriptionSpec } from "./types.ts";

export type SpecCheck = { ok: true; key: string } | { ok: false; problem: string };

/** The subscription's key, or the one-line problem (never the value) that keeps it from being stored. */
export function checkSubscriptionSpec(spec: SubscriptionSpec): SpecCheck {
  // Shape first: canonical JSON of a 60,000-level nesting would overflow the stack.
  const shape = valueProblem(spec.arguments, "arguments");
  if (shape !== null) return { ok: false, problem: shape };
  const key = subscriptionKey(spec.server, spec.name, spec.arguments);
  const problem = runtimeSpecProblem(key, spec);
  return problem === null ? { ok: true, key } : { ok: false, problem };
}

/** The spec of a configured subscription: server `server`'s `events[]` entry (defaults applied by the schema). */
export function configuredSpec(server: string, entry: EventSubscriptionConfig): SubscriptionSpec {
  return {
    server,
    name: entry.name,
    arguments: entry.arguments,
    action: entry.action,
    ...(entry.delivery !== undefined ? { delivery: entry.delivery } : {}),
    ...(entry.instructions !== undefined ? { instructions: entry.instructions } : {}),
    ...(entry.max_age_ms !== undefined ? { max_age_ms: entry.max_age_ms } : {}),
  };
}

interface ServerWithEvents {
  name: string;
  events?: readonly EventSubscriptionConfig[];
}

/**
 * A check of a validated `mcp_servers` list: every configured subscription can be stored. The
 * issue names the entry, `mcp_servers[i].events[j].arguments` (the part that makes a key too long
 * or too deep; the other fields are bounded by the config schema already).
 */
export function StorableSubscriptions<T extends ServerWithEvents>() {
  return v.rawCheck<T[]>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    dataset.value.forEach((server, i) => {
      (server.events ?? []).forEach((entry, j) => {
        const check = checkSubscriptionSpec(configuredSpec(server.name, entry));
        if (check.ok) return;
        addIssue({
          message: check.problem,
          path: [
            { type: "array", origin: "value", input: dataset.value, key: i, value: server },
            { type: "object", origin: "value", input: server as unknown as Record<string, unknown>, key: "events", value: server.events },
            { type: "array", origin: "value", input: server.events as unknown[], key: j, value: entry },
            { type: "object", origin: "value", input: entry as unknown as Record<string, unknown>, key: "arguments", value: entry.arguments },
          ],
        });
      });
    });
  });
}
