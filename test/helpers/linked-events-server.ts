/**
 * A real SDK Client wired to a scripted MCP Events server over the SDK's in-memory transport pair,
 * for unit tests of src/events/wire/server-events.ts without processes: the server side records
 * every message it receives (requests, `notifications/cancelled`) and answers requests the way the
 * test tells it to (at once, or when the test releases them). `pool` is the little of
 * McpServerPool that ServerEvents and EventsService read; like the pool, it reports a
 * `notifications/events/list_changed` heard on the client's transport as `events_list_changed`.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerPool, ServerEvent } from "../../src/mcp/server-pool.ts";
import { ObservedTransport } from "../../src/mcp/observed-transport.ts";
import type { EventsServerConfig } from "../../src/events/config.ts";

type Id = string | number;
type Answer = (params: Record<string, unknown>) => Record<string, unknown>;

export interface LinkedServer {
  client: Client;
  pool: McpServerPool<EventsServerConfig>;
  /** Requests received, by method, in order. */
  requests: { id: Id; method: string; params: Record<string, unknown> }[];
  /** The request ids of every `notifications/cancelled` received. */
  cancelled: Id[];
  /** Methods whose answers wait for `release` (the request stays in flight until then). */
  hold: Set<string>;
  /** Answers every held request of `method` now. */
  release(method: string): void;
  /** Sends a notification from the server to the client. */
  notify(method: string, params?: Record<string, unknown>): Promise<void>;
  /** Ids of requests received and not answered yet. */
  inFlight(): Id[];
  close(): Promise<void>;
}

export const EVENTS_LIST = { events: [{ name: "ticket.updated", delivery: ["poll"] }] };

export async function linkedEventsServer(answers: Record<string, Answer> = {}): Promise<LinkedServer> {
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  const requests: LinkedServer["requests"] = [];
  const cancelled: Id[] = [];
  const held = new Map<Id, { method: string; answer: () => Promise<void> }>();
  const hold = new Set<string>();
  const reply = (id: Id, result: Record<string, unknown>) => serverEnd.send({ jsonrpc: "2.0", id, result } as JSONRPCMessage);
  const answerOf = (method: string, params: Record<string, unknown>): Record<string, unknown> => {
    const given = answers[method];
    if (given !== undefined) return given(params);
    if (method === "initialize") {
      return { protocolVersion: "2025-06-18", capabilities: { events: { listChanged: true } }, serverInfo: { name: "linked", version: "1" } };
    }
    if (method === "events/list") return EVENTS_LIST;
    if (method === "events/poll") return { events: [], cursor: "1", hasMore: false, truncated: false, nextPollMs: 0 };
    return {};
  };
  serverEnd.onmessage = (message) => {
    const m = message as { id?: Id; method?: string; params?: Record<string, unknown> };
    if (m.method === undefined) return;
    const params = m.params ?? {};
    if (m.id === undefined) {
      if (m.method === "notifications/cancelled") {
        cancelled.push(params.requestId as Id);
        held.delete(params.requestId as Id);
      }
      return;
    }
    const id = m.id;
    requests.push({ id, method: m.method, params });
    const answer = () => reply(id, answerOf(m.method!, params));
    if (hold.has(m.method)) held.set(id, { method: m.method, answer });
    else void answer();
  };
  await serverEnd.start();

  const transport = new ObservedTransport(clientEnd, { name: "linked" });
  const client = new Client({ name: "vigil-unit", version: "1" });
  await client.connect(transport);

  const config = { name: "linked", transport: "stdio", command: "none", events: [] } as unknown as EventsServerConfig;
  const listeners = new Set<(e: ServerEvent) => void>();
  transport.onIncoming((message) => {
    if ("method" in message && !("id" in message) && message.method === "notifications/events/list_changed") {
      for (const listener of [...listeners]) listener({ server: "linked", kind: "events_list_changed" });
    }
  });
  const pool = {
    onServerEvent: (listener: (e: ServerEvent) => void) => {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    serverConfig: () => config,
    client: () => client,
    status: () => ({ state: "connected" }),
    rawInitializeResult: () => transport.rawInitializeResult,
    transport: () => transport,
  } as unknown as McpServerPool<EventsServerConfig>;

  return {
    client,
    pool,
    requests,
    cancelled,
    hold,
    release(method) {
      for (const [id, h] of [...held]) {
        if (h.method !== method) continue;
        held.delete(id);
        void h.answer();
      }
    },
    notify: (method, params = {}) => serverEnd.send({ jsonrpc: "2.0", method, params } as JSONRPCMessage),
    inFlight: () => [...held.keys()],
    close: () => client.close(),
  };
}
