/**
 * A SubscriptionHost for unit tests of the push loop (events/subscription/push-loop.ts), on the
 * fake scheduler: its first stream says `active` at cursor "5" and then ends with `end`; later
 * streams stay open until the test stops the loop. `opened` holds each stream's open params, so a
 * test sees where (from which cursor) the loop reopened.
 */
import type { SubscriptionHost } from "../../src/events/subscription/host.ts";
import { PushStream, type StreamEnd } from "../../src/events/wire/push-stream.ts";
import { FakeScheduler } from "./fake-scheduler.ts";

export function endingPushHost(
  end: StreamEnd,
  o: { streamBuffer: number; status?: (sub: unknown, status: { kind: string; error?: string }) => void },
): { clock: FakeScheduler; opened: Record<string, unknown>[]; host: SubscriptionHost } {
  const clock = new FakeScheduler();
  const opened: Record<string, unknown>[] = [];
  const host = {
    tuning: { streamBuffer: o.streamBuffer, streamIdleMs: 600_000 },
    wire: () => ({
      openStream(params: Record<string, unknown>, capacity: number) {
        opened.push(params);
        const stream = new PushStream(capacity, () => {}, clock);
        if (opened.length === 1) {
          stream.offer({ method: "notifications/events/active", params: { cursor: "5" } });
          stream.finish(end);
        }
        return stream;
      },
    }),
    status: o.status ?? (() => {}),
    commit: async () => {},
    persist: () => {},
  } as unknown as SubscriptionHost;
  return { clock, opened, host };
}
