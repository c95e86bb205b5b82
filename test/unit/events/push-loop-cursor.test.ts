// A drained run of pushed events (src/events/subscription/push-loop.ts) hands its newest cursor to
// the run's one commit, so the position is stored by the same write as the events, after them; the
// loop adopts it only once that commit resolved. A failed commit adopts nothing: the stream is
// reopened from the cursor the run started from, and the next run carries the cursor again.
import { expect, test } from "bun:test";
import type { CursorMove, SubscriptionHost } from "../../../src/events/subscription/host.ts";
import { runPush } from "../../../src/events/subscription/push-loop.ts";
import { PushStream } from "../../../src/events/wire/push-stream.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { fakeHostedSubscription } from "../../helpers/hosted-subscription.ts";
import { waitFor } from "../../helpers/wait.ts";

const spec = { server: "s", name: "e", arguments: {}, action: "follow_up", delivery: "push" } as const;
const event = (i: number) => ({ method: "notifications/events/event", params: { eventId: `e${i}`, name: "e", data: {}, cursor: `c${i}` } });

function pushHost(failCommits: number) {
  const clock = new FakeScheduler();
  const opened: Record<string, unknown>[] = [];
  const commits: (string | null | undefined)[] = [];
  let persisted = 0;
  const host = {
    tuning: { streamBuffer: 64, streamIdleMs: 600_000 },
    wire: () => ({
      openStream(params: Record<string, unknown>, capacity: number) {
        opened.push(params);
        const stream = new PushStream(capacity, () => {}, clock);
        stream.offer({ method: "notifications/events/active", params: {} });
        for (const i of [1, 2, 3]) stream.offer(event(i));
        return stream;
      },
    }),
    accept: () => "new",
    gap: () => true,
    status: () => {},
    commit: async (move?: CursorMove) => {
      commits.push(move?.cursor);
      if (commits.length <= failCommits) throw new Error("EIO: planted");
    },
    persist: () => void persisted++,
  } as unknown as SubscriptionHost;
  return { clock, opened, commits, host, persisted: () => persisted };
}

test("a run's cursor is handed to its commit and adopted once the commit resolved", async () => {
  const { opened, commits, host, persisted } = pushHost(0);
  const sub = fakeHostedSubscription(spec);
  const controller = new AbortController();
  const loop = runPush(host, sub, controller.signal);
  await waitFor(() => sub.cursor === "c3", { timeoutMs: 5000, label: "the run's cursor adopted" });
  expect(commits).toEqual(["c3"]);
  expect(persisted()).toBe(0); // no second write for the position
  expect(opened).toHaveLength(1);
  controller.abort();
  await loop;
});

test("after a failed commit the stream reopens from the old cursor, and the next run's commit carries the cursor again", async () => {
  const { clock, opened, commits, host } = pushHost(1);
  const sub = fakeHostedSubscription(spec);
  const controller = new AbortController();
  const loop = runPush(host, sub, controller.signal, { scheduler: clock });
  await waitFor(() => commits.length === 1, { timeoutMs: 5000, label: "the first commit" });
  expect(sub.cursor).toBeNull();
  await waitFor(() => (clock.advance(1000), opened.length === 2), { timeoutMs: 5000, label: "the stream reopened" });
  expect(opened[1]).toMatchObject({ cursor: null });
  await waitFor(() => sub.cursor === "c3", { timeoutMs: 5000, label: "the retried run's cursor adopted" });
  expect(commits).toEqual(["c3", "c3"]);
  controller.abort();
  await loop;
});
