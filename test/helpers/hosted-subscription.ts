/**
 * A HostedSubscription for unit tests of the delivery loops (subscription/host.ts): the given spec,
 * no cursor, an empty dedup window, `markUp` flipping `up`, `stored` a no-op.
 */
import { DedupWindow } from "../../src/events/rules/dedup.ts";
import type { HostedSubscription } from "../../src/events/subscription/host.ts";
import type { SubscriptionSpec } from "../../src/events/types.ts";

export function fakeHostedSubscription(spec: SubscriptionSpec): HostedSubscription {
  let up = false;
  return {
    key: "k",
    spec,
    origin: "configured",
    cursor: null,
    dedup: new DedupWindow([]),
    delivered: 0,
    duplicates: 0,
    get up() {
      return up;
    },
    markUp: () => void (up = true),
    stored: async () => {},
  };
}
