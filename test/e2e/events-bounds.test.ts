// Relatives of "one bad occurrence never wedges a subscription" (issue 11; serve.md §6 items 8, 11),
// end to end against dist/vigil, the events fixture over streamable HTTP and the mock model:
//  - a configured subscription that could never be stored is a config error (exit 2, one line
//    naming its path), not a failure at its first snapshot write;
//  - a poll answer over the message cap is asked for again in smaller pages, so the events before
//    the big one are delivered; the one event that alone is over the cap is one `oversized` gap and
//    the loop keeps polling from the same cursor (it cannot be skipped), until the server moves on;
//  - an event too large for a frame (over 4 MiB of JSON) is an `oversized` gap, over poll and push,
//    and the cursor moves past it: the model is never given what clients and the transcript lack;
//  - a server's error text and termination reason reach frames cut to 1,024 characters.
// No timing is asserted; every wait is bounded.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN } from "../helpers/bin.ts";
import { LineClient, tmpDir } from "../helpers/fixture.ts";
import {
  type EventsEnv,
  StdioServe,
  eventsEnvironment,
  httpServer,
  inBatch,
  isEventFrame,
  isStatus,
  snapshotOnDisk,
  waitRuns,
} from "../helpers/events-serve.ts";
import type { Frame } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

const TICKETS = "ticket.updated";
const isGap = isStatus("gap");
const isOversizedGap = (f: Frame) => isGap(f) && f.reason === "oversized";
const chatBodies = (env: EventsEnv) => env.model.requests.filter((r) => r.path.endsWith("/chat/completions")).map((r) => JSON.stringify(r.body));

async function serveWith(events: Record<string, unknown>[], knobs?: Record<string, string>) {
  const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", events)], ...(knobs ? { knobs } : {}) });
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  return { env, fx: env.fixture!, serve };
}

const polls = async (env: EventsEnv) => (await env.fixture!.state()).requests.filter((r) => r.method === "events/poll").map((r) => r.params);

describe("a configured subscription that could never be stored", () => {
  test("is refused at config load: exit 2, one line naming the path, nothing started", async () => {
    const tmp = tmpDir("vigil-events-bounds");
    cleanups.add(() => tmp.cleanup());
    const configFile = tmp.file("vigil.json");
    writeFileSync(
      configFile,
      JSON.stringify({
        model: { provider: "openai", base_url: "http://127.0.0.1:1/v1", model: "m", api_key_env: "HOME" },
        mcp_servers: [
          { name: "tickets", transport: "http", url: "http://127.0.0.1:1/mcp", events: [{ name: TICKETS, arguments: { project: "p".repeat(70_000) } }] },
        ],
      }),
    );
    const client = new LineClient([VIGIL_BIN, "serve", "--config", configFile, "--state-dir", tmp.file("state"), "--session", "s"]);
    cleanups.add(() => client.dispose());
    expect((await client.exited(15_000)).code).toBe(2);
    const lines = client.stderrText().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(configFile);
    expect(lines[0]).toContain("mcp_servers[0].events[0].arguments: the subscription key");
    expect(lines[0]).toContain("at most 65536 can be stored");
    expect(lines[0]).not.toContain("pppp");
  });
});

describe("a poll answer over the message cap", () => {
  test("smaller pages deliver what comes before the big event; the big one is one oversized gap, polled for from the same cursor until the server moves on", async () => {
    const { env, fx, serve } = await serveWith([{ name: TICKETS, delivery: "poll" }], { VIGIL_MCP_MAX_MESSAGE_BYTES: "65536" });
    // All four wait in one page: the next poll's answer is over the cap.
    await fx.control("events_down", { down: true });
    await waitFor(() => serve.count(isStatus("error")), { until: (n) => n >= 1, timeoutMs: 10_000, label: "a failed poll while down" });
    await fx.control("emit", { event_id: "small-1" });
    const second = await fx.control<{ seq: number }>("emit", { event_id: "small-2" });
    await fx.control("emit_oversized", { bytes: 200_000, event_id: "big-3" });
    await fx.control("emit", { event_id: "small-4" });
    await fx.control("events_down", { down: false });

    await serve.until(isEventFrame("small-1"));
    await serve.until(isEventFrame("small-2"));
    const gap = await serve.until(isOversizedGap);
    expect(gap).toMatchObject({ server: "tickets", name: TICKETS, reason: "oversized", cursor: String(second.seq), event_id: null });
    expect(String(gap.problem)).toContain("response larger than 65536 bytes");

    // Still polling for it, one event at a time, from the cursor before it; told once.
    const seen = (await polls(env)).length;
    const later = await waitFor(() => polls(env), { until: (p) => p.length >= seen + 3, timeoutMs: 15_000, label: "three more polls" });
    for (const p of later.slice(seen)) expect(p).toMatchObject({ cursor: String(second.seq), maxEvents: 1 });
    expect(serve.count(isOversizedGap)).toBe(1);
    await waitRuns(env.model, inBatch("small-2"));
    await waitFor(() => chatBodies(env).some((b) => b.includes("(event id unknown) is too large to be delivered: ")), {
      timeoutMs: 10_000,
      label: "the model told of the unreadable event",
    });

    // The server moves its cursor on (truncated): the loop follows at the full page size.
    await fx.control("truncate_next");
    await serve.until((f) => isGap(f) && f.reason === "truncated");
    await fx.control("emit", { event_id: "small-5" });
    await serve.until(isEventFrame("small-5"));
    expect((await polls(env)).at(-1)).toMatchObject({ maxEvents: 50 });
    expect(serve.count(isEventFrame("big-3"))).toBe(0);
    expect(serve.count(isEventFrame("small-4"))).toBe(0);
  });
});

describe("an event too large for a frame is an oversized gap, and the cursor moves past it", () => {
  for (const mode of ["poll", "push"] as const) {
    test(`over ${mode}: a 9 MB event (under the 32 MiB message cap, over the 8 MiB frame cap)`, async () => {
      const { env, fx, serve } = await serveWith([{ name: TICKETS, delivery: mode }]);
      await fx.control("emit_oversized", { bytes: 9_000_000, event_id: "huge-1" });
      const gap = await serve.until(isOversizedGap, 30_000);
      expect(gap).toMatchObject({ server: "tickets", name: TICKETS, reason: "oversized", event_id: "huge-1" });
      expect(String(gap.problem)).toContain("at most 4194304 fit in a frame");

      await fx.control("emit", { event_id: `after-${mode}` });
      await serve.until(isEventFrame(`after-${mode}`));
      await waitRuns(env.model, inBatch(`after-${mode}`));
      expect(serve.count(isEventFrame("huge-1"))).toBe(0);
      expect(serve.count(isOversizedGap)).toBe(1);
      // What the model got is what clients got: the notice, never the payload.
      for (const body of chatBodies(env)) expect(body).not.toContain("x".repeat(1000));

      const { last_seq } = await fx.state();
      await waitFor(() => Object.values(snapshotOnDisk(env.stateDir, "s")?.subscriptions ?? {})[0]?.cursor, {
        until: (cursor) => cursor === String(last_seq),
        timeoutMs: 10_000,
        label: "the stored cursor past the huge event",
      });
      expect(serve.client.stderrText()).not.toContain("was not stored or sent");
    });
  }
});

describe("a server's error text reaches frames cut to 1,024 characters", () => {
  test("notifications/events/error and a termination: message and reason cut once, with an ellipsis", async () => {
    const { fx, serve } = await serveWith([{ name: TICKETS, delivery: "push" }]);
    const long = "L".repeat(100_000);
    await fx.control("stream_error", { message: long, reason: long });
    const error = await serve.until((f) => isStatus("error")(f) && String(f.error).startsWith("the server reported:"));
    // Lengths first: on failure, a 100,000-character frame is not worth printing.
    expect(String(error.error).length).toBeLessThan(1200);
    expect(String(error.error)).toContain(`${"L".repeat(1024)}…`);

    await fx.control("terminate", { message: long, reason: long });
    const terminated = await serve.until(isStatus("terminated"));
    const body = terminated.error as { code: number; message: string; data: { reason: string } };
    expect([body.message.length, body.data.reason.length]).toEqual([1025, 1025]);
    expect(body.message).toBe(`${"L".repeat(1024)}…`);
    expect(body.data.reason).toBe(`${"L".repeat(1024)}…`);
    for (const f of serve.frames) expect(JSON.stringify(f).length).toBeLessThan(20_000);
  });
});
