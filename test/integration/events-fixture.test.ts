/**
 * The MCP Events fixture server against the MCP SDK client vigil uses (Client with the streamable
 * HTTP and stdio transports), plus raw fetch where the SDK would hide the bytes (capabilities it
 * strips, SSE framing, key order). Waits are bounded conditions; timing is never asserted. Every
 * fixture process and client is stopped after each test.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError, type Notification, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  type ControlClient,
  type EventsFixture,
  type EventsFixtureEnv,
  eventsFixtureStdio,
  startEventsFixture,
  waitControl,
} from "../helpers/events-fixture.ts";
import { LineClient } from "../helpers/fixture.ts";
import { waitFor } from "../helpers/wait.ts";
import { Cleanups } from "../helpers/serve.ts";

const SUB_META = "io.modelcontextprotocol/subscriptionId";
const WAIT_MS = 10_000;
const cleanups = new Cleanups();
afterEach(() => cleanups.run());

type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };
type Note = Notification & { params?: Params };

async function fixture(env: EventsFixtureEnv = {}): Promise<EventsFixture> {
  return startEventsFixture({ env, cleanups });
}

async function connect(fx: EventsFixture, o: { elicitation?: boolean } = {}): Promise<{ client: Client; notes: Note[] }> {
  const client = new Client({ name: "vigil-test", version: "1.0.0" }, { capabilities: o.elicitation ? { elicitation: {} } : {} });
  const notes: Note[] = [];
  client.fallbackNotificationHandler = async (n) => void notes.push(n as Note);
  await client.connect(new StreamableHTTPClientTransport(new URL(fx.mcpUrl)));
  cleanups.add(() => client.close());
  return { client, notes };
}

const rpc = (client: Client, method: string, params: Record<string, unknown> = {}, timeout = WAIT_MS) =>
  client.request({ method, params }, ResultSchema, { timeout });

const poll = (client: Client, params: Record<string, unknown>) =>
  rpc(client, "events/poll", { name: "ticket.updated", arguments: {}, ...params }) as Promise<Record<string, any>>;

/** An events/stream request held open until `abort()`; `done` settles with its final result or error. */
function openStream(client: Client, params: Record<string, unknown> = {}) {
  const ac = new AbortController();
  const done = client.request(
    { method: "events/stream", params: { name: "ticket.updated", arguments: {}, cursor: null, ...params } },
    ResultSchema,
    { signal: ac.signal, timeout: 120_000 },
  );
  done.catch(() => {});
  return { abort: () => ac.abort("test done"), done };
}

async function rpcError(p: Promise<unknown>): Promise<McpError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof McpError) return e;
    throw e;
  }
  throw new Error("expected a JSON-RPC error");
}

const byMethod = (notes: Note[], method: string) => notes.filter((n) => n.method === `notifications/events/${method}`);

function waitNotes(notes: Note[], method: string, count = 1): Promise<Note[]> {
  return waitFor(() => byMethod(notes, method), {
    until: (seen) => seen.length >= count,
    timeoutMs: WAIT_MS,
    label: `${count} ${method} notifications`,
    show: () => `got ${JSON.stringify(notes.map((n) => n.method))}`,
  });
}

/** Reads the control state until `done` holds (bounded). */
function waitState(c: ControlClient, done: (s: Awaited<ReturnType<ControlClient["state"]>>) => boolean) {
  return waitFor(() => c.state(), { until: done, timeoutMs: WAIT_MS, label: "a fixture state", show: (s) => JSON.stringify(s) });
}

async function rawPost(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  });
}

const INIT = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };

/** Reads SSE `data:` payloads from a response body until `enough` holds (bounded), then cancels it. */
async function readSse(res: Response, enough: (frames: string[]) => boolean): Promise<string[]> {
  const frames: string[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const timer = setTimeout(() => void reader.cancel(), WAIT_MS);
  try {
    while (!enough(frames)) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
        frames.push(data.join("\n"));
      }
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
  }
  return frames;
}

describe("HTTP transport basics", () => {
  test("initialize advertises the capability where MCP_FIXTURE_CAPABILITY says (raw bytes; the SDK strips unknown keys)", async () => {
    const where = ["top", "extensions", "both", "none"] as const;
    const fixtures = await Promise.all(where.map((w) => fixture({ MCP_FIXTURE_CAPABILITY: w })));
    const caps = await Promise.all(
      fixtures.map(async (fx) => ((await (await rawPost(fx.mcpUrl, INIT)).json()) as any).result.capabilities),
    );
    const ext = { "io.modelcontextprotocol/events": { listChanged: true } };
    expect(caps[0]).toEqual({ tools: {}, events: { listChanged: true } });
    expect(caps[1]).toEqual({ tools: {}, extensions: ext });
    expect(caps[2]).toEqual({ tools: {}, events: { listChanged: true }, extensions: ext });
    expect(caps[3]).toEqual({ tools: {} });

    // With no capability every events/* method is unknown.
    const { client } = await connect(fixtures[3]!);
    expect((await rpcError(rpc(client, "events/list"))).code).toBe(-32601);
  });

  test("the SDK client connects, negotiates its version, lists and calls tools", async () => {
    const fx = await fixture();
    const { client } = await connect(fx);
    expect(client.getServerVersion()).toEqual({ name: "events-fixture", version: "1.0.0" });
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(["echo", "blob"]);
    expect(await client.callTool({ name: "echo", arguments: { text: "hi" } })).toEqual({ content: [{ type: "text", text: "hi" }] });
    const blob = (await client.callTool({ name: "blob", arguments: { bytes: 1000 } })) as { content: { text: string }[] };
    expect(blob.content[0]!.text).toBe("x".repeat(1000));
    expect(await client.ping()).toEqual({});
    const state = await fx.state();
    expect(state.methods.slice(0, 2)).toEqual(["initialize", "notifications/initialized"]);
  });

  test("unknown protocol versions fall back to 2025-06-18; GET is 405, DELETE 200, a notification 202", async () => {
    const fx = await fixture();
    const init = (await (await rawPost(fx.mcpUrl, { ...INIT, params: { ...INIT.params, protocolVersion: "1999-01-01" } })).json()) as any;
    expect(init.result.protocolVersion).toBe("2025-06-18");
    expect((await fetch(fx.mcpUrl)).status).toBe(405);
    expect((await fetch(fx.mcpUrl, { method: "DELETE" })).status).toBe(200);
    const note = await rawPost(fx.mcpUrl, { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(note.status).toBe(202);
    expect(await note.text()).toBe("");
    const batch = (await (await rawPost(fx.mcpUrl, [{ jsonrpc: "2.0", id: 1, method: "ping" }, { jsonrpc: "2.0", id: 2, method: "ping" }])).json()) as any[];
    expect(batch.map((m) => m.id)).toEqual([1, 2]);
  });

  test("MCP_FIXTURE_SESSION=1 issues Mcp-Session-Id and requires it afterwards", async () => {
    const fx = await fixture({ MCP_FIXTURE_SESSION: true });
    const init = await rawPost(fx.mcpUrl, INIT);
    const session = init.headers.get("mcp-session-id");
    expect(session).toBeTruthy();
    expect((await rawPost(fx.mcpUrl, { jsonrpc: "2.0", id: 2, method: "ping" })).status).toBe(400);
    expect((await rawPost(fx.mcpUrl, { jsonrpc: "2.0", id: 2, method: "ping" }, { "mcp-session-id": session! })).status).toBe(200);
    // The SDK client keeps the session id by itself.
    const { client } = await connect(fx);
    expect(await client.ping()).toEqual({});
  });

  test("an unknown or expired Mcp-Session-Id gets 404 Session not found, as from the SDK's server; a new initialize starts over", async () => {
    const fx = await fixture({ MCP_FIXTURE_SESSION: true });
    const ping = (session: string) => rawPost(fx.mcpUrl, { jsonrpc: "2.0", id: 2, method: "ping" }, { "mcp-session-id": session });
    const unknown = await ping("no-such-session");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as any).error).toEqual({ code: -32001, message: "Session not found" });

    const session = (await rawPost(fx.mcpUrl, INIT)).headers.get("mcp-session-id")!;
    expect((await ping(session)).status).toBe(200);
    expect(await fx.control("expire_sessions")).toEqual({ expired: 1, streams: 0 });
    expect((await ping(session)).status).toBe(404);
    expect((await fetch(fx.mcpUrl, { method: "DELETE", headers: { "mcp-session-id": session } })).status).toBe(404);
    expect((await fx.state()).sessions_expired).toBe(1);

    const fresh = (await rawPost(fx.mcpUrl, INIT)).headers.get("mcp-session-id")!;
    expect(fresh).not.toBe(session);
    expect((await ping(fresh)).status).toBe(200);
  });
});

describe("events/list", () => {
  test("descriptors, paged one per page with MCP_FIXTURE_LIST_PAGE_SIZE=1", async () => {
    const fx = await fixture({ MCP_FIXTURE_LIST_PAGE_SIZE: 1 });
    const { client } = await connect(fx);
    const first = (await rpc(client, "events/list")) as any;
    expect(first.events.map((e: any) => e.name)).toEqual(["ticket.updated"]);
    expect(first.events[0].delivery).toEqual(["webhook", "push", "poll"]);
    expect(first.events[0].inputSchema).toEqual({ type: "object", properties: { project: { type: "string" } } });
    expect(first.events[0].payloadSchema.type).toBe("object");
    const second = (await rpc(client, "events/list", { cursor: first.nextCursor })) as any;
    expect(second.events.map((e: any) => e.name)).toEqual(["build.finished"]);
    expect(second.events[0].delivery).toEqual(["poll"]);
    expect(second.nextCursor).toBeUndefined();
    expect((await fx.state()).list_calls).toBe(2);
  });

  test("MCP_FIXTURE_LIST_LOOP=1 repeats its nextCursor forever; removed events are not listed", async () => {
    const fx = await fixture({ MCP_FIXTURE_LIST_LOOP: true });
    const { client } = await connect(fx);
    const a = (await rpc(client, "events/list")) as any;
    const b = (await rpc(client, "events/list", { cursor: a.nextCursor })) as any;
    expect(b.nextCursor).toBe(a.nextCursor);
    await fx.control("remove_event", { name: "build.finished" });
    const c = (await rpc(client, "events/list", { cursor: a.nextCursor })) as any;
    expect(c.events.map((e: any) => e.name)).toEqual(["ticket.updated"]);
  });
});

describe("events/poll", () => {
  test("bootstrap, cursor, maxEvents/hasMore, project filter, truncate_next; requests are recorded", async () => {
    const fx = await fixture({ MCP_FIXTURE_NEXT_POLL_MS: 250 });
    const { client } = await connect(fx);
    await fx.control("emit", {});
    const boot = await poll(client, { cursor: null });
    expect(boot).toEqual({ events: [], cursor: "1", hasMore: false, truncated: false, nextPollMs: 250 });

    await fx.control("emit", { project: "a" });
    await fx.control("emit", { project: "b" });
    await fx.control("emit", { project: "a", data: { ticket_id: "T-x", summary: "custom" }, event_id: "custom-id" });
    const page1 = await poll(client, { cursor: "1", arguments: { project: "a" }, maxEvents: 1 });
    expect(page1.events).toHaveLength(1);
    expect(page1.events[0]).toEqual({
      eventId: "evt-2",
      name: "ticket.updated",
      timestamp: expect.any(String),
      data: { ticket_id: "T-2", summary: expect.any(String) },
    });
    expect(page1).toMatchObject({ cursor: "2", hasMore: true, truncated: false });
    const page2 = await poll(client, { cursor: page1.cursor, arguments: { project: "a" } });
    expect(page2.events.map((e: any) => e.eventId)).toEqual(["custom-id"]);
    expect(page2.events[0].data).toEqual({ ticket_id: "T-x", summary: "custom" });
    expect(page2).toMatchObject({ cursor: "4", hasMore: false });
    const empty = await poll(client, { cursor: "4" });
    expect(empty).toMatchObject({ events: [], cursor: "4", hasMore: false });

    await fx.control("truncate_next");
    expect(await poll(client, { cursor: "2" })).toMatchObject({ events: [], cursor: "4", truncated: true });
    expect(await poll(client, { cursor: "not-ours" })).toMatchObject({ events: [], cursor: "4", truncated: true });

    const state = await fx.state();
    expect(state.polls).toBe(6);
    expect(state.requests[0]).toEqual({ method: "events/poll", params: { name: "ticket.updated", arguments: {}, cursor: null }, id: expect.anything() });
  });

  test("list_changed_on_poll: the next poll's SSE answer carries notifications/events/list_changed before its result; cancels are counted", async () => {
    const fx = await fixture();
    const { client, notes } = await connect(fx);
    await fx.control("list_changed_on_poll");
    expect((await fx.state()).list_changed_pending).toBe(true);
    expect(await poll(client, { cursor: null })).toMatchObject({ events: [], cursor: "0" });
    // The notification came in on the poll's own response, before its result resolved the request.
    expect(byMethod(notes, "list_changed")).toHaveLength(1);
    await poll(client, { cursor: "0" });
    expect(byMethod(notes, "list_changed")).toHaveLength(1);
    const ac = new AbortController();
    const held = client.request({ method: "events/stream", params: { name: "ticket.updated", arguments: {}, cursor: null } }, ResultSchema, { signal: ac.signal, timeout: WAIT_MS });
    held.catch(() => {});
    await waitNotes(notes, "active");
    ac.abort("done");
    const state = await waitFor(() => fx.state(), { until: (s) => s.cancels === 1, timeoutMs: WAIT_MS, label: "one cancel counted" });
    expect({ pending: state.list_changed_pending, sent: state.list_changed_sent }).toEqual({ pending: false, sent: 1 });
  });

  test("NotFound and Unsupported, sketch numbering by default", async () => {
    const fx = await fixture();
    const { client } = await connect(fx);
    const notFound = await rpcError(poll(client, { name: "nope", cursor: null }));
    expect([notFound.code, notFound.data]).toEqual([-32011, { kind: "event" }]);
    const unsupported = await rpcError(openStream(client, { name: "build.finished" }).done);
    expect([unsupported.code, unsupported.data]).toEqual([-32014, { feature: "deliveryMode", value: "push" }]);
    expect((await poll(client, { name: "build.finished", cursor: null })).events).toEqual([]);
    // Webhook subscriptions belong to a principal (the SDK client here sends no bearer token).
    expect((await rpcError(rpc(client, "events/subscribe", { name: "ticket.updated" }))).code).toBe(-32012);
  });

  test("MCP_FIXTURE_ERRORS=sep renumbers; FORBID_FIRST; RESULT_TYPE decorates every result", async () => {
    const fx = await fixture({ MCP_FIXTURE_ERRORS: "sep", MCP_FIXTURE_FORBID_FIRST: 1, MCP_FIXTURE_RESULT_TYPE: true });
    const { client } = await connect(fx);
    const forbidden = await rpcError(poll(client, { cursor: null }));
    expect([forbidden.code, forbidden.data]).toEqual([-32024, { reason: "not yet" }]);
    expect(await poll(client, { cursor: null })).toMatchObject({ resultType: "complete", cursor: "0" });
    expect((await rpcError(poll(client, { name: "nope", cursor: null }))).code).toBe(-32023);
    expect((await rpcError(openStream(client, { name: "build.finished" }).done)).code).toBe(-32026);
    expect(await rpc(client, "ping")).toEqual({ resultType: "complete" });
  });

  test("events_down fails events/* with -32603 while tools keep working", async () => {
    const fx = await fixture({ MCP_FIXTURE_EVENTS_DOWN: true });
    const { client } = await connect(fx);
    const down = await rpcError(rpc(client, "events/list"));
    expect([down.code, down.data]).toEqual([-32603, { reason: "down" }]);
    expect(await client.callTool({ name: "echo", arguments: { text: "up" } })).toEqual({ content: [{ type: "text", text: "up" }] });
    await fx.control("events_down", { down: false });
    expect(((await rpc(client, "events/list")) as any).events).toHaveLength(2);
  });

  test("remove_event and restore_event", async () => {
    const fx = await fixture();
    const { client } = await connect(fx);
    await fx.control("remove_event", { name: "ticket.updated" });
    expect((await rpcError(poll(client, { cursor: null }))).data).toEqual({ kind: "event" });
    await fx.control("restore_event", { name: "ticket.updated" });
    expect(await poll(client, { cursor: null })).toMatchObject({ events: [] });
  });

  test("MCP_FIXTURE_HASMORE_EMPTY and MCP_FIXTURE_HASMORE_DUPS always say hasMore", async () => {
    const [empty, dups] = await Promise.all([fixture({ MCP_FIXTURE_HASMORE_EMPTY: true }), fixture({ MCP_FIXTURE_HASMORE_DUPS: true })]);
    const a = (await connect(empty)).client;
    await empty.control("emit");
    expect(await poll(a, { cursor: "0" })).toMatchObject({ events: [], cursor: "0", hasMore: true });
    expect(await poll(a, { cursor: "0" })).toMatchObject({ events: [], cursor: "0", hasMore: true });
    const b = (await connect(dups)).client;
    await dups.control("emit");
    await dups.control("emit");
    const first = await poll(b, { cursor: "0" });
    const again = await poll(b, { cursor: first.cursor });
    expect(first.events.map((e: any) => e.eventId)).toEqual(["evt-1"]);
    expect(again).toEqual(first);
    expect(again.hasMore).toBe(true);
  });

  test("MCP_FIXTURE_LONG_POLL holds an empty poll until a matching event", async () => {
    const fx = await fixture({ MCP_FIXTURE_LONG_POLL: true });
    const { client } = await connect(fx);
    const boot = await poll(client, { cursor: null });
    const held = rpc(client, "events/poll", { name: "ticket.updated", arguments: { project: "p" }, cursor: boot.cursor, timeoutMs: 60_000 }, 90_000);
    await waitState(fx, (s) => s.polls === 2);
    await fx.control("emit", { project: "other" });
    await fx.control("emit", { project: "p" });
    const got = (await held) as any;
    expect(got.events.map((e: any) => e.eventId)).toEqual(["evt-2"]);
  });

  test("schema_change fails the next poll with a cursor once", async () => {
    const fx = await fixture();
    const { client } = await connect(fx);
    await fx.control("schema_change");
    const err = await rpcError(poll(client, { cursor: "0" }));
    expect([err.code, err.data]).toEqual([-32014, { feature: "payloadSchema", reason: "schema_changed" }]);
    expect(await poll(client, { cursor: "0" })).toMatchObject({ events: [] });
  });

  test("MCP_FIXTURE_NESTED_DURING=poll: the poll answers over SSE after the client answered elicitation/create", async () => {
    const fx = await fixture({ MCP_FIXTURE_NESTED_DURING: "poll" });
    const { client } = await connect(fx, { elicitation: true });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
    expect(await poll(client, { cursor: null })).toMatchObject({ events: [], cursor: "0" });
    const state = await fx.state();
    expect(state.nested_answers).toEqual([{ id: "nested-1", result: { action: "decline" } }]);
  });
});

describe("events/stream", () => {
  test("active, replay, live events, heartbeats, all tagged with the request id; cancel ends it server-side", async () => {
    const fx = await fixture({ MCP_FIXTURE_HEARTBEAT_MS: 100 });
    const { client, notes } = await connect(fx);
    await fx.control("emit", { project: "a" });
    await fx.control("emit", { project: "b" });
    const stream = openStream(client, { cursor: "0", arguments: { project: "a" } });
    const [active] = await waitNotes(notes, "active");
    expect(active!.params).toMatchObject({ cursor: "0", truncated: false });
    await waitNotes(notes, "event");
    await fx.control("emit", { project: "a" });
    const events = await waitNotes(notes, "event", 2);
    expect(events.map((n) => [n.params!.eventId, n.params!.cursor])).toEqual([["evt-1", "1"], ["evt-3", "3"]]);
    const [beat] = await waitNotes(notes, "heartbeat");
    expect(beat!.params!.cursor).toBe("3");

    const state = await fx.state();
    expect(state.streams_open).toBe(1);
    const id = state.streams[0]!.id;
    expect(new Set(notes.map((n) => n.params!._meta![SUB_META]))).toEqual(new Set([id]));

    stream.abort();
    await expect(stream.done).rejects.toThrow();
    const after = await waitState(fx, (s) => s.streams_open === 0);
    expect(after.cancelled).toEqual([id]);
    expect(after.streams[0]!.end).toBe("cancelled");
    expect(after.disconnects).toBe(0);
  });

  test("terminate sends terminated (Forbidden) and a final result; the request resolves", async () => {
    const fx = await fixture();
    const { client, notes } = await connect(fx);
    const stream = openStream(client);
    await waitNotes(notes, "active");
    expect(await fx.control("terminate")).toEqual({ streams: 1 });
    expect(await stream.done).toEqual({ _meta: {} });
    const [terminated] = byMethod(notes, "terminated");
    expect(terminated!.params!.error).toEqual({ code: -32012, message: "Forbidden", data: { reason: "Access revoked" } });
    expect((await fx.state()).streams[0]!.end).toBe("terminated");
  });

  test("schema_change and remove_event terminate matching streams", async () => {
    const fx = await fixture();
    const { client, notes } = await connect(fx);
    const s1 = openStream(client);
    await waitNotes(notes, "active");
    await fx.control("schema_change");
    await s1.done;
    expect(byMethod(notes, "terminated")[0]!.params!.error).toMatchObject({ code: -32014, data: { feature: "payloadSchema", reason: "schema_changed" } });

    const s2 = openStream(client);
    await waitNotes(notes, "active", 2);
    await fx.control("remove_event", { name: "ticket.updated" });
    await s2.done;
    expect(byMethod(notes, "terminated")[1]!.params!.error).toMatchObject({ code: -32011, data: { kind: "event" } });
    expect((await rpcError(openStream(client).done)).code).toBe(-32011);
  });

  test("stream_error, gap, redeliver, silence, emit_burst", async () => {
    const fx = await fixture();
    const { client, notes } = await connect(fx);
    openStream(client);
    await waitNotes(notes, "active");
    await fx.control("stream_error");
    const [err] = await waitNotes(notes, "error");
    expect(err!.params!.error).toEqual({ code: -32603, message: "UpstreamError", data: { reason: "upstream 503" } });
    await fx.control("emit");
    await fx.control("gap");
    const actives = await waitNotes(notes, "active", 2);
    expect(actives[1]!.params).toMatchObject({ cursor: "1", truncated: true });

    expect(await fx.control("redeliver", { event_id: "evt-1" })).toMatchObject({ seq: 1, streams: 1 });
    const twice = await waitNotes(notes, "event", 2);
    expect(twice[1]!.params).toEqual(twice[0]!.params!);

    await fx.control("silence", { silent: true });
    await fx.control("emit"); // logged, not sent
    await fx.control("silence", { silent: false });
    await fx.control("emit");
    const events = await waitNotes(notes, "event", 3);
    expect(events.map((n) => n.params!.eventId)).toEqual(["evt-1", "evt-1", "evt-3"]);
    expect((await fx.state()).log_size).toBe(3);

    expect(await fx.control("emit_burst", { count: 300 })).toEqual({ first_seq: 4, last_seq: 303 });
    const all = await waitNotes(notes, "event", 303);
    expect(all.slice(3).map((n) => n.params!.cursor)).toEqual(Array.from({ length: 300 }, (_, i) => String(i + 4)));
  });

  test("REPLAY_INCLUSIVE resends the event at the cursor; a foreign cursor is a gap", async () => {
    const fx = await fixture({ MCP_FIXTURE_REPLAY_INCLUSIVE: true });
    const { client, notes } = await connect(fx);
    await fx.control("emit");
    await fx.control("emit");
    openStream(client, { cursor: "1" });
    const events = await waitNotes(notes, "event", 2);
    expect(events.map((n) => n.params!.cursor)).toEqual(["1", "2"]);
    openStream(client, { cursor: "bogus" });
    const actives = await waitNotes(notes, "active", 2);
    expect(actives.map((n) => n.params!.truncated).sort()).toEqual([false, true]);
  });

  test("raw SSE framing and key order; a client that goes away is recorded as a disconnect", async () => {
    const fx = await fixture();
    await fx.control("emit");
    const res = await rawPost(fx.mcpUrl, { jsonrpc: "2.0", id: "s-1", method: "events/stream", params: { name: "ticket.updated", arguments: {}, cursor: "0" } });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const frames = await readSse(res, (f) => f.length >= 2);
    expect(JSON.parse(frames[0]!).params).toEqual({ cursor: "0", truncated: false, _meta: { [SUB_META]: "s-1" } });
    // The SDK re-orders keys when it parses, so the default order is checked on the raw frame.
    expect(frames[1]!.startsWith('{"jsonrpc":"2.0","method":"notifications/events/event","params":{"eventId":"evt-1",')).toBe(true);
    expect(Object.keys(JSON.parse(frames[1]!).params)).toEqual(["eventId", "name", "timestamp", "data", "cursor", "_meta"]);
    const state = await waitState(fx, (s) => s.disconnects === 1);
    expect(state.streams_open).toBe(0);
    expect(state.streams[0]!.end).toBe("disconnected");
  });

  test("MCP_FIXTURE_NESTED_DURING=stream sends elicitation/create on the stream and records the answer", async () => {
    const fx = await fixture({ MCP_FIXTURE_NESTED_DURING: "stream" });
    const { client, notes } = await connect(fx, { elicitation: true });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "cancel" }));
    openStream(client);
    await waitNotes(notes, "active");
    const state = await waitState(fx, (s) => s.nested_answers.length === 1);
    expect(state.nested_answers[0]).toEqual({ id: "nested-1", result: { action: "cancel" } });
  });

  test("emit_oversized is one SSE event; KEY_ORDER=params_first puts the payload before the method", async () => {
    const fx = await fixture({ MCP_FIXTURE_KEY_ORDER: "params_first" });
    const res = await rawPost(fx.mcpUrl, { jsonrpc: "2.0", id: 9, method: "events/stream", params: { name: "ticket.updated", arguments: {}, cursor: null } });
    const reading = readSse(res, (f) => f.length >= 2);
    await waitState(fx, (s) => s.streams_open === 1);
    const bytes = 3 * 1024 * 1024;
    await fx.control("emit_oversized", { bytes });
    const frames = await reading;
    const event = frames[1]!;
    expect(event.length).toBeGreaterThan(bytes);
    expect(event.startsWith('{"params":{"data":{')).toBe(true);
    expect(event.endsWith(',"method":"notifications/events/event","jsonrpc":"2.0"}')).toBe(true);
    expect(JSON.parse(event).params.data.blob).toHaveLength(bytes);
  });
});

describe("stdio transport", () => {
  test("the SDK stdio client: initialize, poll, a stream, cancel by notifications/cancelled", async () => {
    const entry = eventsFixtureStdio({ cleanups, env: { MCP_FIXTURE_HEARTBEAT_MS: 100 } });
    const client = new Client({ name: "vigil-test", version: "1.0.0" });
    const notes: Note[] = [];
    client.fallbackNotificationHandler = async (n) => void notes.push(n as Note);
    await client.connect(new StdioClientTransport({ command: entry.command, args: entry.args, env: entry.env, stderr: "pipe" }));
    cleanups.add(() => client.close());
    const control = await waitControl(entry.controlFile, { cleanups });

    expect(client.getServerVersion()?.name).toBe("events-fixture");
    await control.control("emit");
    expect(await poll(client, { cursor: null })).toMatchObject({ events: [], cursor: "1" });

    const stream = openStream(client, { cursor: "0" });
    await waitNotes(notes, "event");
    await waitNotes(notes, "heartbeat");
    const id = (await control.state()).streams[0]!.id;
    stream.abort();
    await expect(stream.done).rejects.toThrow();
    const state = await waitState(control, (s) => s.streams_open === 0);
    expect(state.cancelled).toEqual([id]);
    expect(state.streams[0]!.end).toBe("cancelled");
  });

  test("garbage first line, one stdout line per message even when oversized, exit on stdin EOF", async () => {
    const entry = eventsFixtureStdio({ cleanups, env: { MCP_FIXTURE_GARBAGE_STDOUT: true, MCP_FIXTURE_KEY_ORDER: "params_first" } });
    const proc = new LineClient([entry.command, ...entry.args], { env: { ...process.env, ...entry.env } });
    cleanups.add(() => proc.dispose());
    const control = await waitControl(entry.controlFile, { cleanups });
    const garbage = await proc.next();
    expect(() => JSON.parse(garbage!)).toThrow();

    expect((await proc.request("initialize", INIT.params)).result!.serverInfo).toEqual({ name: "events-fixture", version: "1.0.0" });
    proc.send({ jsonrpc: "2.0", id: "st", method: "events/stream", params: { name: "ticket.updated", arguments: {}, cursor: null } });
    expect(JSON.parse((await proc.next())!).method).toBe("notifications/events/active");
    const bytes = 2 * 1024 * 1024;
    await control.control("emit_oversized", { bytes });
    const line = (await proc.next())!;
    expect(line.startsWith('{"params":{"data":{')).toBe(true);
    expect(JSON.parse(line).params.data.blob).toHaveLength(bytes);

    await control.control("terminate");
    expect(JSON.parse((await proc.next())!).method).toBe("notifications/events/terminated");
    expect(JSON.parse((await proc.next())!)).toEqual({ jsonrpc: "2.0", id: "st", result: { _meta: {} } });

    proc.closeStdin();
    expect((await proc.exited()).code).toBe(0);
  });

  test("MCP_FIXTURE_NESTED_DURING=poll over stdio: the nested request is a line of its own", async () => {
    const entry = eventsFixtureStdio({ cleanups, env: { MCP_FIXTURE_NESTED_DURING: "poll" } });
    const proc = new LineClient([entry.command, ...entry.args], { env: { ...process.env, ...entry.env } });
    cleanups.add(() => proc.dispose());
    const control = await waitControl(entry.controlFile, { cleanups });
    const answer = await proc.request("events/poll", { name: "ticket.updated", arguments: {}, cursor: null });
    expect(answer.result).toMatchObject({ events: [], cursor: "0" });
    const nested = JSON.parse(proc.unmatched[0]!);
    expect(nested).toMatchObject({ jsonrpc: "2.0", id: "nested-1", method: "elicitation/create" });
    proc.send({ jsonrpc: "2.0", id: "nested-1", error: { code: -32601, message: "no" } });
    const state = await waitState(control, (s) => s.nested_answers.length === 1);
    expect(state.nested_answers[0]).toEqual({ id: "nested-1", error: { code: -32601, message: "no" } });
  });
});
