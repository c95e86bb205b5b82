/**
 * Issue 12 item C, last bullet: on `notifications/events/list_changed` the wire re-calls
 * `events/list` by itself, once per burst (debounced on an injected scheduler), and the cached
 * list — what `mcp_events_list` shows as available — is the new one, without another request.
 */
import { afterEach, expect, test } from "bun:test";
import { LIST_CHANGED_DELAY_MS } from "../../../src/events/wire/list-refresh.ts";
import { ServerEvents } from "../../../src/events/wire/server-events.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { type LinkedServer, linkedEventsServer } from "../../helpers/linked-events-server.ts";
import { waitFor } from "../../helpers/wait.ts";

const open: LinkedServer[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function linked() {
  let names = ["ticket.updated"];
  const server = await linkedEventsServer({ "events/list": () => ({ events: names.map((name) => ({ name, delivery: ["poll"] })) }) });
  open.push(server);
  const scheduler = new FakeScheduler();
  const wire = new ServerEvents(server.pool, "linked", undefined, scheduler);
  const lists = () => server.requests.filter((r) => r.method === "events/list").length;
  return { server, wire, scheduler, lists, offer: (next: string[]) => (names = next) };
}

test("a burst of list_changed notices: one events/list after the delay, and the cache holds the new list", async () => {
  const { server, wire, scheduler, lists, offer } = await linked();
  expect((await wire.list()).map((d) => d.name)).toEqual(["ticket.updated"]);
  offer(["ticket.updated", "build.finished"]);
  for (let i = 0; i < 3; i++) await server.notify("notifications/events/list_changed");
  await waitFor(() => scheduler.pending === 1, { timeoutMs: 5000, label: "a re-list armed" });
  // Nobody asked, and the delay has not passed: nothing sent yet.
  scheduler.advance(LIST_CHANGED_DELAY_MS - 1);
  await server.client.ping();
  expect(lists()).toBe(1);

  scheduler.advance(1);
  await waitFor(lists, { until: (n) => n === 2, timeoutMs: 5000, label: "the re-list" });
  await waitFor(async () => (await wire.list()).length, { until: (n) => n === 2, timeoutMs: 5000, label: "the new list cached" });
  // Served from the cache the re-list filled: no third request.
  expect((await wire.list()).map((d) => d.name)).toEqual(["ticket.updated", "build.finished"]);
  expect(lists()).toBe(2);
  expect(scheduler.pending).toBe(0);
});

test("a notice during the re-list arms another; the two calls never overlap", async () => {
  const { server, wire, scheduler, lists, offer } = await linked();
  await wire.list();
  server.hold.add("events/list");
  await server.notify("notifications/events/list_changed");
  await waitFor(() => scheduler.pending === 1, { timeoutMs: 5000, label: "a re-list armed" });
  scheduler.advance(LIST_CHANGED_DELAY_MS);
  await waitFor(() => server.inFlight().length === 1, { timeoutMs: 5000, label: "the re-list in flight" });

  offer(["build.finished"]);
  await server.notify("notifications/events/list_changed");
  await waitFor(() => scheduler.pending === 1, { timeoutMs: 5000, label: "the next re-list armed" });
  scheduler.advance(LIST_CHANGED_DELAY_MS);
  await server.client.ping();
  expect(server.inFlight()).toHaveLength(1);
  server.release("events/list");
  await waitFor(lists, { until: (n) => n === 3, timeoutMs: 5000, label: "the second re-list" });
  server.release("events/list");
  await waitFor(async () => (await wire.list()).map((d) => d.name).join(), { until: (n) => n === "build.finished", timeoutMs: 5000, label: "the newest list cached" });
  expect(lists()).toBe(3);
});

test("a failed re-list leaves the list stale: the next caller asks again", async () => {
  let fail = false;
  const server = await linkedEventsServer({
    "events/list": () => (fail ? { no: "events array" } : { events: [{ name: "a", delivery: ["poll"] }] }),
  });
  open.push(server);
  const scheduler = new FakeScheduler();
  const wire = new ServerEvents(server.pool, "linked", undefined, scheduler);
  await wire.list();
  fail = true;
  await server.notify("notifications/events/list_changed");
  await waitFor(() => scheduler.pending === 1, { timeoutMs: 5000, label: "a re-list armed" });
  scheduler.advance(LIST_CHANGED_DELAY_MS);
  const lists = () => server.requests.filter((r) => r.method === "events/list").length;
  await waitFor(lists, { until: (n) => n === 2, timeoutMs: 5000, label: "the failing re-list" });
  fail = false;
  await waitFor(async () => (await wire.list().catch(() => [])).length, { until: (n) => n === 1, timeoutMs: 5000, label: "listed again on demand" });
  expect(lists()).toBe(3);
});
