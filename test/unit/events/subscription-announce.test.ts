/**
 * `subscribed` waits for a stored position (issue 11 item 10): a subscription that comes up without
 * one announces (and settles `ready`) only after the commit that carries its first cursor; one
 * whose position is stored already announces at once.
 */
import { expect, test } from "bun:test";
import type { McpEventStatusDetail } from "../../../src/events/frames.ts";
import type { SubscriptionHost } from "../../../src/events/subscription/host.ts";
import { Subscription } from "../../../src/events/subscription/subscription.ts";

function fakeHost() {
  const statuses: McpEventStatusDetail["kind"][] = [];
  const control = { commits: 0, failNext: false };
  const host = {
    status: (_sub: unknown, detail: McpEventStatusDetail) => statuses.push(detail.kind),
    commit: async () => {
      control.commits++;
      if (control.failNext) {
        control.failNext = false;
        throw new Error("disk full");
      }
    },
  } as unknown as SubscriptionHost;
  return { host, statuses, control };
}

const spec = { server: "s", name: "e", arguments: {}, action: "follow_up" as const };
const make = (host: SubscriptionHost, cursor: string | null) => new Subscription(host, { key: "k", spec, origin: "configured", cursor, recent: [] });

test("no position yet: up, but announced only once the first cursor is committed", async () => {
  const { host, statuses, control } = fakeHost();
  const sub = make(host, null);
  let ready = false;
  void sub.ready.then(() => (ready = true));
  sub.markUp("poll");
  expect(sub.up).toBe(true);
  await Promise.resolve();
  expect({ statuses, ready }).toEqual({ statuses: [], ready: false });
  sub.cursor = "c1";
  await sub.stored();
  expect(control.commits).toBe(1);
  expect(statuses).toEqual(["subscribed"]);
  expect(await sub.ready).toBeNull();
  await sub.stored(); // announced once
  expect({ statuses, commits: control.commits }).toEqual({ statuses: ["subscribed"], commits: 1 });
});

test("a failed commit is reported and the announcement waits for the next stored page", async () => {
  const { host, statuses, control } = fakeHost();
  const sub = make(host, null);
  sub.markUp("push");
  sub.cursor = "c1";
  control.failNext = true;
  await sub.stored();
  expect(statuses).toEqual(["error"]);
  await sub.stored(); // the next page or run tries again
  expect(statuses).toEqual(["error", "subscribed"]);
});

test("a stored position (from the snapshot) is announced at once, without a commit", () => {
  const { host, statuses, control } = fakeHost();
  const sub = make(host, "c0");
  sub.markUp("poll");
  expect({ statuses, commits: control.commits }).toEqual({ statuses: ["subscribed"], commits: 0 });
});

test("stopped before its position was stored: never announced", async () => {
  const { host, statuses } = fakeHost();
  const sub = make(host, null);
  sub.markUp("poll");
  await sub.stop();
  await sub.stored();
  expect(statuses).toEqual([]);
  expect(await sub.ready).toBeInstanceOf(Error);
});
