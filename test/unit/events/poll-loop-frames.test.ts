// One poll page's frames (src/events/subscription/poll-loop.ts) are held while the page is taken —
// its events, its truncated gap and a full-queue status — and released before the commit, so the
// session stores them with one transcript write (events/frame-hold.ts), in the order they came.
// The commit carries the page's cursor: it is stored by the same write, not persisted afterwards.
import { expect, test } from "bun:test";
import type { SubscriptionHost } from "../../../src/events/subscription/host.ts";
import { runPoll } from "../../../src/events/subscription/poll-loop.ts";
import { fakeHostedSubscription } from "../../helpers/hosted-subscription.ts";

const spec = { server: "s", name: "e", arguments: {}, action: "follow_up", delivery: "poll" } as const;
const occurrence = (i: number) => ({ eventId: `e${i}`, name: "e", data: {} });

test("a page's accepts and gap happen inside one hold, released before the commit, which carries the page's cursor", async () => {
  const log: string[] = [];
  let held = 0;
  const controller = new AbortController();
  let polls = 0;
  const host = {
    tuning: { pollFloorMs: 1, longPollMs: 0, retryCapMs: 1000 },
    wire: () => ({
      poll: async () => {
        if (++polls > 1) {
          controller.abort();
          throw new Error("stopped");
        }
        return { events: [occurrence(1), occurrence(2), occurrence(3)], cursor: "3", hasMore: false, truncated: true, nextPollMs: 1 };
      },
    }),
    accept: (_s: unknown, o: { eventId: string }) => (log.push(`${held > 0 ? "held" : "unheld"} ${o.eventId}`), "new"),
    gap: (_s: unknown, g: { reason: string }) => (log.push(`${held > 0 ? "held" : "unheld"} gap ${g.reason}`), true),
    status: () => log.push("status"),
    commit: async (move?: { cursor: string | null }) => void log.push(`commit (held ${held}) with cursor ${move?.cursor ?? "none"}`),
    persist: () => log.push("persist"),
    holdFrames: () => {
      held++;
      log.push("hold");
      return () => {
        held--;
        log.push("release");
      };
    },
  } as unknown as SubscriptionHost;
  await runPoll(host, fakeHostedSubscription(spec), controller.signal).catch(() => {});
  expect(log).toEqual(["hold", "held e1", "held e2", "held e3", "held gap truncated", "release", "commit (held 0) with cursor 3"]);
});
