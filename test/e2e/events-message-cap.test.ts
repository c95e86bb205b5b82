// The per-message cap on MCP paths in `vigil serve` (serve.md §6 item 8; design notes §5.4, §5.6),
// end to end with VIGIL_MCP_MAX_MESSAGE_BYTES=65536: an over-cap push event is skipped unread,
// reported as a gap and explained to the model, the stream carries on; an over-cap tool result
// fails its call and the connection survives. Over streamable HTTP and over stdio, against
// dist/vigil, the events fixture and the in-process mock model. No timing is asserted.
import { describe, expect, test } from "bun:test";
import type { MockModel } from "../fixtures/mock-model.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type ControlClient, type EventsFixtureEnv, waitControl } from "../helpers/events-fixture.ts";
import {
  StdioServe,
  eventsEnvironment,
  eventsFixtureStdio,
  httpServer,
  inBatch,
  isEventFrame,
  isStatus,
  stdioServer,
  waitRuns,
} from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Frame, lastUserText, messagesOf } from "../helpers/serve.ts";

const cleanups = e2eSuite();

/** 64 KiB: well above every normal message, far below the 200 kB events and results sent here. */
const CAP = 65_536;
const KNOBS = { VIGIL_MCP_MAX_MESSAGE_BYTES: String(CAP) };
const OVER = 200_000;
const TICKETS = "ticket.updated";

type Transport = "http" | "stdio";

const chatRequests = (model: MockModel) => model.requests.filter((r) => r.path.endsWith("/chat/completions"));

const isGap = isStatus("gap");
const DROPPED = "was larger than the message-size limit and was dropped unread";
/** Model requests whose last user message tells of a dropped over-cap message. */
const droppedNotices = (model: MockModel) => chatRequests(model).filter((r) => lastUserText(r).includes(DROPPED));

/**
 * A stdio serve whose server `tickets` is the events fixture over `transport`, with the given
 * `events` entries (push subscriptions come up before this returns) and fixture switches.
 */
async function capped(transport: Transport, events: Record<string, unknown>[], fixtureEnv: EventsFixtureEnv = {}) {
  const entry = transport === "stdio" ? eventsFixtureStdio({ env: fixtureEnv, cleanups }) : null;
  const env = await eventsEnvironment(cleanups, {
    fixtureEnv: transport === "http" ? fixtureEnv : false,
    servers: (fx) => [transport === "http" ? httpServer(fx!, "tickets", events) : stdioServer(entry!, "tickets", events)],
    knobs: KNOBS,
  });
  const serve = StdioServe.start(cleanups, env);
  const fx: ControlClient = entry !== null ? await waitControl(entry.controlFile, { cleanups }) : env.fixture!;
  await waitFor(() => serve.count(isStatus("subscribed")) >= events.length, {
    timeoutMs: 15_000,
    label: "subscriptions up",
    show: () => `${JSON.stringify(serve.frames.map((f) => f.type + (f.kind ? `:${f.kind}` : "")))}\n${serve.client.stderrText()}`,
  });
  return { env, fx, serve };
}

/**
 * An over-cap event, then a normal one: one gap frame for the first, the second delivered and
 * run, the model told once that a message was dropped unread, and the stream never replaced.
 */
async function overCapThenNormal(transport: Transport, fixtureEnv: EventsFixtureEnv) {
  const { env, fx, serve } = await capped(transport, [{ name: TICKETS, delivery: "push" }], fixtureEnv);
  const before = await fx.state();
  const big = await fx.control<{ seq: number }>("emit_oversized", { bytes: OVER, event_id: "big-1" });
  const gap = await serve.until(isGap);
  expect(gap).toMatchObject({ server: "tickets", name: TICKETS, reason: "oversized" });

  await fx.control("emit", { event_id: "small-2" });
  const next = await serve.until(isEventFrame("small-2"));
  expect((next.event as { cursor?: unknown }).cursor).toBe(String(big.seq + 1));
  await waitRuns(env.model, inBatch("small-2"));
  await waitFor(() => droppedNotices(env.model).length > 0, { timeoutMs: 10_000, label: "a dropped-message notice to the model" });

  // The fixture writes `cursor` after the payload, so the 4 KiB head kept of the over-cap message
  // cannot carry it: the gap reports no cursor rather than a wrong one, and the subscription's
  // position is kept until the next event moves it on.
  expect([null, String(big.seq)]).toContain(gap.cursor as string | null);
  const list = await serve.command({ type: "mcp_events_list", id: "list" });
  expect(list.data.subscriptions).toEqual([expect.objectContaining({ cursor: String(big.seq + 1), delivered: 1, state: "active" })]);

  const after = await fx.state();
  expect(after.streams_total).toBe(before.streams_total);
  expect(after.streams_open).toBe(1);
  expect(serve.count(isGap)).toBe(1);
  expect(serve.count(isEventFrame("big-1"))).toBe(0);
  // The dropped payload never reaches the model; only the notice does.
  for (const r of chatRequests(env.model)) expect(JSON.stringify(r.body)).not.toContain("x".repeat(1000));
  return { env, fx, serve, gap, notice: lastUserText(droppedNotices(env.model)[0]!) };
}

describe("message cap: over-cap push events", () => {
  for (const transport of ["http", "stdio"] as const) {
    test(`over ${transport}: an over-cap push event is skipped, reported as a gap, and the next event is delivered on the same stream`, async () => {
      const { gap, notice } = await overCapThenNormal(transport, {});
      expect(gap.event_id).toBe("big-1");
      expect(gap.possibly_not_an_event).toBeUndefined();
      expect(notice).toContain("[gap] An event for `ticket.updated` on `tickets` (event id `big-1`)");
      expect(notice).not.toContain("possibly not an event");
    });

    test(`over ${transport}: with the payload first, the over-cap message is reported as possibly not an event, once, not looped on`, async () => {
      const { env, fx, gap, notice } = await overCapThenNormal(transport, { MCP_FIXTURE_KEY_ORDER: "params_first" });
      expect(gap.possibly_not_an_event).toBe(true);
      expect(notice).toContain("possibly not an event");
      // A stream looping on the over-cap message would report the gap again before it reached a
      // later event: once that event's run is in, a second notice would have been too.
      await fx.control("emit", { event_id: "small-3" });
      await waitRuns(env.model, inBatch("small-3"));
      expect(droppedNotices(env.model)).toHaveLength(1);
    });
  }

  test("one over-cap message without routing reaching two subscriptions on one stdio server: two gap frames, one notice to the model", async () => {
    const alpha = { project: "alpha" };
    const beta = { project: "beta" };
    const { env, fx, serve } = await capped(
      "stdio",
      [
        { name: TICKETS, arguments: alpha, delivery: "push" },
        { name: TICKETS, arguments: beta, delivery: "push" },
      ],
      { MCP_FIXTURE_KEY_ORDER: "params_first" },
    );
    await fx.control("emit_oversized", { bytes: OVER, project: "alpha" });
    await waitFor(() => serve.count(isGap) >= 2, { timeoutMs: 15_000, label: "two gap frames" });
    const gaps = serve.frames.filter(isGap);
    expect(gaps.map((g) => g.arguments)).toEqual(expect.arrayContaining([alpha, beta]));
    for (const g of gaps) expect(g).toMatchObject({ reason: "oversized", possibly_not_an_event: true });

    await fx.control("emit", { event_id: "alpha-2", project: "alpha" });
    await serve.until(isEventFrame("alpha-2"));
    await waitRuns(env.model, inBatch("alpha-2"));
    await waitFor(() => droppedNotices(env.model).length > 0, { timeoutMs: 10_000, label: "a dropped-message notice to the model" });
    // What is checked is that no second notice comes: a stream looping on the over-cap message
    // would report it again before a later event, so that event's run is the marker.
    await fx.control("emit", { event_id: "alpha-3", project: "alpha" });
    await waitRuns(env.model, inBatch("alpha-3"));
    expect(serve.count(isGap)).toBe(2);
    const notices = chatRequests(env.model).flatMap((r) => lastUserText(r).split(DROPPED).length - 1);
    expect(notices.reduce((a, b) => a + b, 0)).toBe(1);
  });
});

describe("message cap: over-cap tool results", () => {
  for (const transport of ["http", "stdio"] as const) {
    test(`over ${transport}: an over-cap tool result fails that call and the connection survives`, async () => {
      const { env, serve } = await capped(transport, []);
      env.model.script([
        { toolCalls: [{ name: "tickets__blob", arguments: { bytes: OVER } }] },
        { toolCalls: [{ name: "tickets__echo", arguments: { text: "still-connected" } }] },
        { text: "done" },
      ]);
      serve.send({ type: "prompt", id: "p1", message: "fetch the blob" });
      const end = await serve.until((f: Frame) => f.type === "run_end");
      expect(end.status).toBe("ok");

      const results = serve.frames.filter((f) => f.type === "tool_result");
      expect(results.map((f) => f.is_error)).toEqual([true, false]);
      const requests = chatRequests(env.model);
      expect(requests).toHaveLength(3);
      const blobResult = messagesOf(requests[1]).at(-1)!;
      expect(blobResult.role).toBe("tool");
      expect(String(blobResult.content)).toContain(`larger than ${CAP} bytes`);
      expect(String(blobResult.content)).not.toContain("x".repeat(1000));
      expect(messagesOf(requests[2]).at(-1)).toMatchObject({ role: "tool", content: "still-connected" });
    });
  }
});
