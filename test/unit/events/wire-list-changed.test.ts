/**
 * Issue 12 item C, last bullet: on `notifications/events/list_changed` the wire re-calls
 * `events/list` by itself, once per burst (debounced on an injected scheduler), and the cached
 * list — what `mcp_events_list` shows as available — is the new one, without another request.
 * The notice travels the one route serve has for it: the pool's `events_list_changed`, mapped by
 * EventsService to the server's wire.
 */
import { afterEach, expect, test } from "bun:test";
import { LIST_CHANGED_DELAY_MS } from "../../../src/events/wire/list-refresh.ts";
import type { McpServerPool } from "../../../src/mcp/server-pool.ts";
import type { ServeConfig } from "../../../src/serve/config/schema.ts";
import { loadServeTuning } from "../../../src/serve/config/tuning.ts";
import { EventsService } from "../../../src/serve/events-service.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { type LinkedServer, linkedEventsServer } from "../../helpers/linked-events-server.ts";
import { waitFor } from "../../helpers/wait.ts";

const open: LinkedServer[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** The server's wire as serve builds it: EventsService's, hearing the pool's events. */
function wireOf(pool: McpServerPool, scheduler: FakeScheduler) {
  const config = { mcp_servers: [] } as unknown as ServeConfig;
  const service = new EventsService({ pool, config, tuning: loadServeTuning({}), stateDir: "/nonexistent", owner: "mcp-events", reapable: false, scheduler });
  return service.wire("linked");
}

async function linked() {
  let names = ["ticket.updated"];
  const server = await linkedEventsServer({ "events/list": () => ({ events: names.map((name) => ({ name, delivery: ["poll"] })) }) });
  open.push(server);
  const scheduler = new FakeScheduler();
  const wire = wireOf(server.pool, scheduler);
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
  const wire = wireOf(server.pool, scheduler);
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

test("a notice on a new connection that nothing was asked on yet is acted on too", async () => {
  const before = await linkedEventsServer();
  const after = await linkedEventsServer({ "events/list": () => ({ events: [{ name: "build.finished", delivery: ["poll"] }] }) });
  open.push(before, after);
  // The pool's server, before and after a reconnect: each connection is its own SDK client.
  let current = before;
  const pool = {
    serverConfig: (name: string) => current.pool.serverConfig(name),
    client: (name: string) => current.pool.client(name),
    status: (name: string) => current.pool.status(name),
    rawInitializeResult: (name: string) => current.pool.rawInitializeResult(name),
    transport: (name: string) => current.pool.transport(name),
    onServerEvent: (listener: Parameters<McpServerPool["onServerEvent"]>[0]) => {
      const offs = [before.pool.onServerEvent(listener), after.pool.onServerEvent(listener)];
      return () => offs.forEach((off) => off());
    },
  } as unknown as McpServerPool;
  const scheduler = new FakeScheduler();
  const wire = wireOf(pool, scheduler);
  expect((await wire.list()).map((d) => d.name)).toEqual(["ticket.updated"]);
  current = after;
  await after.notify("notifications/events/list_changed");
  await waitFor(() => scheduler.pending === 1, { timeoutMs: 5000, label: "a re-list armed" });
  scheduler.advance(LIST_CHANGED_DELAY_MS);
  const lists = () => after.requests.filter((r) => r.method === "events/list").length;
  await waitFor(lists, { until: (n) => n === 1, timeoutMs: 5000, label: "the re-list on the new connection" });
  await waitFor(async () => (await wire.list()).map((d) => d.name).join(), { until: (n) => n === "build.finished", timeoutMs: 5000, label: "the new list cached" });
  expect(lists()).toBe(1);
});
