/**
 * The events wire (ServerEvents over the shared pool) against the events fixture, over streamable
 * HTTP and stdio: support read from the raw initialize result in either location, paged and cached
 * events/list, refusals before anything is sent, stream routing by request id, and cancellation
 * that the server sees (notifications/cancelled, and over HTTP the dropped response).
 */
import { afterEach, expect, test } from "bun:test";
import { McpServerPool } from "../../src/mcp/server-pool.ts";
import type { McpServerConfig } from "../../src/serve/config/schema.ts";
import { EventsRefused, ServerEvents } from "../../src/events/wire/server-events.ts";
import type { PushStream } from "../../src/events/wire/push-stream.ts";
import { type EventsFixtureEnv, eventsFixtureStdio, startEventsFixture, waitControl } from "../helpers/events-fixture.ts";
import { waitUntil } from "../helpers/fixture.ts";
import { Cleanups } from "../helpers/serve.ts";

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

async function httpPool(env: EventsFixtureEnv, events: McpServerConfig["events"] | null = []) {
  const fixture = await startEventsFixture({ env, cleanups });
  const config = { name: "fx", transport: "http", url: fixture.mcpUrl, headers: {}, ...(events !== null ? { events } : {}) } as McpServerConfig;
  const pool = await McpServerPool.connect([config], { clientInfo: { name: "t", version: "1" } });
  cleanups.add(() => pool.close());
  return { fixture, pool, wire: new ServerEvents(pool, "fx") };
}

async function nextNotification(stream: PushStream) {
  const item = await stream.next(10_000);
  if (item === "idle" || item.kind !== "notification") throw new Error(`expected a notification, got ${JSON.stringify(item)}`);
  return item.notification;
}

for (const location of ["top", "extensions", "both"] as const) {
  test(`support is read from the raw initialize result (capability at ${location}); the list is paged and cached`, async () => {
    const { fixture, wire } = await httpPool({ MCP_FIXTURE_CAPABILITY: location, MCP_FIXTURE_LIST_PAGE_SIZE: 1 });
    const events = await wire.list();
    expect(events.map((e) => e.name)).toEqual(["ticket.updated", "build.finished"]);
    const calls = (await fixture.state()).list_calls;
    await wire.list();
    expect((await fixture.state()).list_calls).toBe(calls);
    wire.invalidate();
    await wire.list();
    expect((await fixture.state()).list_calls).toBeGreaterThan(calls);
  });
}

test("a server without the capability is refused before anything is sent", async () => {
  const { fixture, wire } = await httpPool({ MCP_FIXTURE_CAPABILITY: "none" });
  await expect(wire.list()).rejects.toBeInstanceOf(EventsRefused);
  expect((await fixture.state()).methods.filter((m) => m.startsWith("events/"))).toEqual([]);
});

test("a server without an events entry in the config is never asked", async () => {
  const { fixture, wire } = await httpPool({}, null);
  await expect(wire.list()).rejects.toThrow(/no "events" entry/);
  expect((await fixture.state()).methods.filter((m) => m.startsWith("events/"))).toEqual([]);
});

test("a repeating list cursor ends discovery instead of looping", async () => {
  const { wire } = await httpPool({ MCP_FIXTURE_LIST_LOOP: true, MCP_FIXTURE_LIST_PAGE_SIZE: 1 });
  const events = await wire.list();
  expect(events.length).toBeGreaterThan(0);
});

test("over HTTP a stream gets its own notifications, and closing it drops the response", async () => {
  // The fixture ignores the cancel notification, as a server may: only vigil dropping the
  // response ends the stream.
  const { fixture, wire } = await httpPool({ MCP_FIXTURE_HEARTBEAT_MS: 60_000, MCP_FIXTURE_IGNORE_CANCEL: true });
  const a = wire.openStream({ name: "ticket.updated", arguments: { project: "a" }, cursor: null }, 16);
  const b = wire.openStream({ name: "ticket.updated", arguments: { project: "b" }, cursor: null }, 16);
  expect((await nextNotification(a)).method).toBe("notifications/events/active");
  expect((await nextNotification(b)).method).toBe("notifications/events/active");
  await fixture.control("emit", { project: "b", event_id: "only-b" });
  const got = await nextNotification(b);
  expect(got.params.eventId).toBe("only-b");
  expect(a.queued).toBe(0);
  a.close();
  // The SDK posts notifications/cancelled; the connection also drops the stream's response.
  expect(await waitUntil(async () => (await fixture.state()).cancelled.length === 1, 15_000)).toBe(true);
  expect(await waitUntil(async () => (await fixture.state()).disconnects >= 1, 15_000)).toBe(true);
  expect(wire.openStreams).toBe(1);
  b.close();
});

test("over stdio closing a stream sends notifications/cancelled", async () => {
  const entry = eventsFixtureStdio({ cleanups, env: { MCP_FIXTURE_HEARTBEAT_MS: 60_000 } });
  const config = { name: "fx", transport: "stdio", command: entry.command, args: entry.args, env: entry.env, events: [] } as unknown as McpServerConfig;
  const pool = await McpServerPool.connect([config], { clientInfo: { name: "t", version: "1" }, graceMs: 200 });
  cleanups.add(() => pool.close());
  const control = await waitControl(entry.controlFile, { cleanups });
  const wire = new ServerEvents(pool, "fx");
  const stream = wire.openStream({ name: "ticket.updated", arguments: {}, cursor: null }, 16);
  expect((await nextNotification(stream)).method).toBe("notifications/events/active");
  await control.control("emit", { event_id: "s-1" });
  expect((await nextNotification(stream)).params.eventId).toBe("s-1");
  stream.close();
  expect(await waitUntil(async () => (await control.state()).cancelled.length === 1, 10_000)).toBe(true);
});

test("an unknown event on events/stream ends the stream with the server's error", async () => {
  const { wire } = await httpPool({ MCP_FIXTURE_ERRORS: "sep" });
  const stream = wire.openStream({ name: "nope", arguments: {}, cursor: null }, 16);
  const item = await stream.next(10_000);
  expect(item).toMatchObject({ kind: "end", end: { kind: "rpc_error", code: -32023 } });
});
