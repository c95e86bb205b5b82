/**
 * Issue 12 item D: every `events/*` request has its own signal, derived from the caller's long-lived
 * one and let go of when it settles. A real SDK Client over the in-memory transport pair: the
 * long-lived signal holds no listener per completed request, and aborting it cancels only what is
 * still in flight. One `events/list` per server at a time (single-flight).
 */
import { afterEach, expect, test } from "bun:test";
import { ServerEvents } from "../../../src/events/wire/server-events.ts";
import { type LinkedServer, linkedEventsServer } from "../../helpers/linked-events-server.ts";
import { countedSignal } from "../../helpers/counted-signal.ts";
import { waitFor } from "../../helpers/wait.ts";

const open: LinkedServer[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function linked(answers?: Parameters<typeof linkedEventsServer>[0]): Promise<{ server: LinkedServer; wire: ServerEvents }> {
  const server = await linkedEventsServer(answers);
  open.push(server);
  return { server, wire: new ServerEvents(server.pool, "linked") };
}

const POLL = { name: "ticket.updated", arguments: {}, cursor: "1", maxEvents: 50 };

test("1,000 completed polls leave no listener on the subscription's signal; aborting it cancels only the poll in flight", async () => {
  const { server, wire } = await linked();
  const { controller, listeners } = countedSignal();
  for (let i = 0; i < 1000; i++) await wire.poll(POLL, controller.signal);
  expect(listeners()).toBe(0);

  server.hold.add("events/poll");
  const inFlight = wire.poll(POLL, controller.signal);
  inFlight.catch(() => {});
  await waitFor(() => server.inFlight().length === 1, { timeoutMs: 5000, label: "the held poll reached the server" });
  expect(listeners()).toBe(1);
  const [heldId] = server.inFlight();

  controller.abort(new Error("unsubscribed"));
  await expect(inFlight).rejects.toThrow();
  // A ping after the abort: whatever cancels the abort sent reached the server before its answer.
  await server.client.ping();
  expect(server.cancelled).toEqual([heldId!]);
  expect(listeners()).toBe(0);
});

test("a list that was answered is not cancelled by a later abort; events/list requests get their own signal too", async () => {
  const { server, wire } = await linked();
  const { controller, listeners } = countedSignal();
  expect((await wire.list(controller.signal)).map((d) => d.name)).toEqual(["ticket.updated"]);
  await wire.poll(POLL, controller.signal);
  expect(listeners()).toBe(0);
  controller.abort(new Error("stopped"));
  await server.client.ping();
  expect(server.cancelled).toEqual([]);
});

test("two subscriptions starting together share one events/list; later ones read the cache", async () => {
  const { server, wire } = await linked();
  server.hold.add("events/list");
  const a = wire.list(new AbortController().signal);
  const b = wire.list(new AbortController().signal);
  await waitFor(() => server.inFlight().length === 1, { timeoutMs: 5000, label: "one events/list in flight" });
  server.release("events/list");
  const [la, lb] = await Promise.all([a, b]);
  expect(la).toEqual(lb);
  expect(await wire.list()).toEqual(la);
  expect(server.requests.filter((r) => r.method === "events/list")).toHaveLength(1);
});

test("one of two waiters giving up does not cancel the shared events/list; the last one to give up does", async () => {
  const { server, wire } = await linked();
  server.hold.add("events/list");
  const first = new AbortController();
  const second = new AbortController();
  const a = wire.list(first.signal);
  const b = wire.list(second.signal);
  a.catch(() => {});
  b.catch(() => {});
  await waitFor(() => server.inFlight().length === 1, { timeoutMs: 5000, label: "one events/list in flight" });
  const [listId] = server.inFlight();

  first.abort(new Error("unsubscribed"));
  await expect(a).rejects.toThrow("unsubscribed");
  await server.client.ping();
  expect(server.cancelled).toEqual([]);

  second.abort(new Error("unsubscribed too"));
  await expect(b).rejects.toThrow("unsubscribed too");
  await server.client.ping();
  expect(server.cancelled).toEqual([listId!]);

  // Nothing was cached from the abandoned call: the next list asks again, once.
  server.hold.delete("events/list");
  expect((await wire.list()).map((d) => d.name)).toEqual(["ticket.updated"]);
  expect(server.requests.filter((r) => r.method === "events/list")).toHaveLength(2);
});

test("a list asked for after the list changed does not join the out-of-date call: it waits for it, then asks once more", async () => {
  const { server, wire } = await linked();
  server.hold.add("events/list");
  const before = wire.list();
  await waitFor(() => server.inFlight().length === 1, { timeoutMs: 5000, label: "the first events/list in flight" });
  wire.invalidate();
  const after = wire.list();
  // Still one at a time: the second call waits for the first to settle.
  await server.client.ping();
  expect(server.requests.filter((r) => r.method === "events/list")).toHaveLength(1);
  server.release("events/list");
  await before;
  await waitFor(() => server.inFlight().length === 1, { timeoutMs: 5000, label: "the second events/list in flight" });
  server.release("events/list");
  await after;
  expect(server.requests.filter((r) => r.method === "events/list")).toHaveLength(2);
  await wire.list();
  expect(server.requests.filter((r) => r.method === "events/list")).toHaveLength(2);
});
