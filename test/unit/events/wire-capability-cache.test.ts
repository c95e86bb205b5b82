/**
 * The events capability is read from a connection's `initialize` result once per connection, not
 * once per request (issue 16: each poll page deep-copied the whole result). A new connection — a
 * new SDK Client — is read afresh, so a server that comes back without the extension is refused,
 * and a connection whose result is not known yet is never judged on it for good.
 */
import { expect, test } from "bun:test";
import type { McpServerPool } from "../../../src/mcp/server-pool.ts";
import type { EventsServerConfig } from "../../../src/events/config.ts";
import { EventsRefused, ServerEvents } from "../../../src/events/wire/server-events.ts";

const WITH_EVENTS = { protocolVersion: "2025-06-18", capabilities: { events: {} }, serverInfo: { name: "s", version: "1" } };
const WITHOUT_EVENTS = { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "s", version: "1" } };
const POLL = { name: "ticket.updated", arguments: {}, cursor: "1", maxEvents: 50 };

/** A poll as its callers make it, from an async function (a refusal before sending is thrown synchronously by poll). */
const pollOnce = async (wire: ServerEvents) => wire.poll(POLL);

function fakeServer() {
  const polled: number[] = [];
  const connection = (n: number) => ({ request: async () => (polled.push(n), { events: [], cursor: "2", hasMore: false }) });
  const state = {
    client: connection(1) as unknown,
    raw: WITH_EVENTS as Record<string, unknown> | undefined,
    reads: 0,
  };
  const config = { name: "fx", transport: "stdio", command: "none", events: [] } as unknown as EventsServerConfig;
  const pool = {
    serverConfig: () => config,
    client: () => state.client,
    status: () => ({ state: "connected" }),
    rawInitializeResult: () => {
      state.reads++;
      return state.raw === undefined ? undefined : structuredClone(state.raw);
    },
    transport: () => undefined,
    onServerEvent: () => () => {},
  } as unknown as McpServerPool<EventsServerConfig>;
  return { state, pool, polled, connection };
}

test("100 polls on one connection read its initialize result once", async () => {
  const fx = fakeServer();
  const wire = new ServerEvents(fx.pool, "fx");
  for (let i = 0; i < 100; i++) await wire.poll(POLL);
  expect(fx.polled.length).toBe(100);
  expect(fx.state.reads).toBe(1);
});

test("a new connection is read afresh: one that comes back without the extension is refused before anything is sent", async () => {
  const fx = fakeServer();
  const wire = new ServerEvents(fx.pool, "fx");
  await wire.poll(POLL);
  fx.state.client = fx.connection(2);
  fx.state.raw = WITHOUT_EVENTS;
  await expect(pollOnce(wire)).rejects.toBeInstanceOf(EventsRefused);
  expect(fx.polled).toEqual([1]);
  expect(fx.state.reads).toBe(2);

  // And back again, with the extension: polls flow on the third connection.
  fx.state.client = fx.connection(3);
  fx.state.raw = WITH_EVENTS;
  await wire.poll(POLL);
  expect(fx.polled).toEqual([1, 3]);
});

test("a connection whose initialize result is not known yet is refused now, and judged again once it is", async () => {
  const fx = fakeServer();
  fx.state.raw = undefined;
  const wire = new ServerEvents(fx.pool, "fx");
  await expect(pollOnce(wire)).rejects.toBeInstanceOf(EventsRefused);
  fx.state.raw = WITH_EVENTS;
  await wire.poll(POLL);
  expect(fx.polled).toEqual([1]);
});
