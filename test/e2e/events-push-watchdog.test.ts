// The measured push watchdog (serve.md §6 item 10; issue 12 item E), end to end: dist/vigil in
// stdio mode, the events fixture over streamable HTTP heartbeating every 500 ms, the mock model.
//
// How the mechanism is proved without asserting timing: VIGIL_EVENTS_STREAM_IDLE_MS is 10 minutes,
// far beyond the bounded waits below, so a reconnect seen within them can only come from the
// measured interval (2 × ~500 ms, at least 1 s). The reconnect's status frame names that interval.
import { describe, expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import type { ControlClient, FixtureState } from "../helpers/events-fixture.ts";
import { StdioServe, eventsEnvironment, httpServer, inBatch, isEventFrame, isStatus, waitRuns } from "../helpers/events-serve.ts";
import type { Frame } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

const TICKETS = "ticket.updated";
const FALLBACK_MS = "600000";

function fixtureState(fx: ControlClient, done: (s: FixtureState) => boolean, what: string, ms = 20_000): Promise<FixtureState> {
  return waitFor(() => fx.state(), {
    until: done,
    timeoutMs: ms,
    label: `fixture: ${what}`,
    show: (s) => ({ streams_total: s.streams_total, streams_open: s.streams_open, streams: s.streams.slice(-5) }),
  });
}

const isSilenceReconnect = (f: Frame) => f.type === "mcp_event_status" && f.kind === "error" && String(f.error).includes("was silent");

describe("MCP events: the push watchdog measures the heartbeat", () => {
  test("heartbeats every 500 ms, then none: the stream is reconnected from the last delivered event's cursor, long before the fallback", async () => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: { MCP_FIXTURE_HEARTBEAT_MS: 500 },
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: TICKETS, delivery: "push" }])],
      knobs: { VIGIL_EVENTS_STREAM_IDLE_MS: FALLBACK_MS },
    });
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    await serve.until(isStatus("subscribed"));

    const delivered = await fx.control<{ seq: number }>("emit", { event_id: "w-1" });
    const frame = await serve.until(isEventFrame("w-1"));
    expect((frame.event as { cursor?: unknown }).cursor).toBe(String(delivered.seq));
    await waitRuns(env.model, inBatch("w-1"));

    // Enough heartbeats on the open stream for vigil to have measured their interval.
    const beating = await fixtureState(fx, (s) => s.streams_open === 1 && (s.streams.at(-1)?.heartbeats ?? 0) >= 3, "three heartbeats on the stream");
    const before = beating.streams_total;

    // The server stops heartbeating but keeps the connection open.
    await fx.control("heartbeats", { stopped: true });
    const after = await fixtureState(fx, (s) => s.streams_total > before, "a new events/stream after the heartbeats stopped");
    const reconnect = after.streams[before]!;
    expect(reconnect.name).toBe(TICKETS);
    expect(reconnect.cursor).toBe(String(delivered.seq));

    const status = await serve.until(isSilenceReconnect);
    expect(status).toMatchObject({ server: "tickets", name: TICKETS, retry_in_ms: 0 });
    expect(String(status.error)).toContain("measured heartbeat interval");
    expect(serve.client.stderrText()).toContain("measured heartbeat interval");

    // The new stream delivers: the next event arrives once, from the stored position on.
    await fx.control("emit", { event_id: "w-2" });
    await serve.until(isEventFrame("w-2"));
    await waitRuns(env.model, inBatch("w-2"));
    expect(serve.count(isEventFrame("w-1"))).toBe(1);
  });
});
