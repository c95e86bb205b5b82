// Hostile occurrences and requests cannot wedge a subscription (serve.md §6 item 11; issue 11
// items 3–5), end to end against dist/vigil and the events fixture over streamable HTTP:
//  - an event whose eventId is over 1,024 characters, over poll and over push, and a poll event
//    nested 60,000 levels deep, are each reported once as an `invalid_event` gap, the cursor moves
//    past them, and every later event is delivered (also after a restart);
//  - a runtime subscribe whose key could never be stored is refused before anything starts.
// No timing is asserted; every wait is bounded.
import { describe, expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
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
const LONG_ID = `long-${"x".repeat(2000)}`;
const isGap = isStatus("gap");
const isInvalidGap = (f: Frame) => isGap(f) && f.reason === "invalid_event";

type Mode = "poll" | "push";

async function serveWith(mode: Mode, env?: EventsEnv) {
  const e =
    env ??
    (await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: TICKETS, delivery: mode }])],
    }));
  const serve = StdioServe.start(cleanups, e);
  await serve.until(isStatus("subscribed"));
  return { env: e, fx: e.fixture!, serve };
}

/** Emits `ids` one by one and waits until each was delivered as an `mcp_event` frame. */
async function deliverAll(serve: StdioServe, fx: EventsEnv["fixture"], ids: string[]): Promise<void> {
  for (const id of ids) {
    await fx!.control("emit", { event_id: id });
    await serve.until(isEventFrame(id));
  }
}

describe("a hostile occurrence is skipped as an invalid_event gap, and the subscription keeps going", () => {
  for (const mode of ["poll", "push"] as const) {
    test(`over ${mode}: an eventId over 1,024 characters`, async () => {
      const { env, fx, serve } = await serveWith(mode);
      await fx.control("emit", { event_id: LONG_ID });
      const gap = await serve.until(isInvalidGap);
      expect(gap).toMatchObject({ server: "tickets", name: TICKETS, reason: "invalid_event" });
      // Quoted, but cut to the documented 256 characters.
      expect(gap.event_id).toBe(`${LONG_ID.slice(0, 256)}…`);
      expect(String(gap.problem)).toContain("eventId is 2005 characters long (at most 1024)");

      const later = Array.from({ length: 8 }, (_, i) => `after-${mode}-${i}`);
      await deliverAll(serve, fx, later);
      // The model is told of the skipped event and gets the next one.
      await waitRuns(env.model, inBatch(later[0]!));
      await waitFor(() => env.model.requests.some((r) => JSON.stringify(r.body).includes("could not be accepted and was skipped")), {
        timeoutMs: 10_000,
        label: "the model told of the skipped event",
      });
      expect(serve.count(isInvalidGap)).toBe(1);
      expect(serve.count(isEventFrame(LONG_ID))).toBe(0);

      // The cursor moved past all of it, on disk too (the snapshot is written, not wedged).
      const { last_seq } = await fx.state();
      await waitFor(() => Object.values(snapshotOnDisk(env.stateDir, "s")?.subscriptions ?? {})[0]?.cursor, {
        until: (cursor) => cursor === String(last_seq),
        timeoutMs: 10_000,
        label: "the stored cursor at the last event",
        show: (cursor) => `cursor ${String(cursor)}, last seq ${last_seq}`,
      });
    });
  }

  test("over poll: an event nested 60,000 levels deep", async () => {
    const { fx, serve } = await serveWith("poll");
    const depth = 60_000;
    const raw = `{"eventId":"deep-1","name":"${TICKETS}","timestamp":"2026-01-01T00:00:00Z","data":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`;
    await fx.control("emit_raw", { raw });
    const gap = await serve.until(isInvalidGap);
    expect(gap).toMatchObject({ event_id: "deep-1", reason: "invalid_event" });
    expect(String(gap.problem)).toContain("nested deeper than 64 levels");
    await deliverAll(serve, fx, Array.from({ length: 8 }, (_, i) => `after-deep-${i}`));
    expect(serve.count(isInvalidGap)).toBe(1);
    expect(serve.client.stderrText()).not.toContain("Maximum call stack size exceeded");
  });

  test("over poll: after a restart the subscription resumes past the skipped event, which is not reported again", async () => {
    const first = await serveWith("poll");
    await first.fx.control("emit", { event_id: LONG_ID });
    await first.serve.until(isInvalidGap);
    await deliverAll(first.serve, first.fx, ["before-restart"]);
    const { last_seq } = await first.fx.state();
    await waitFor(() => Object.values(snapshotOnDisk(first.env.stateDir, "s")?.subscriptions ?? {})[0]?.cursor, {
      until: (cursor) => cursor === String(last_seq),
      timeoutMs: 10_000,
      label: "the stored cursor before the restart",
    });
    first.serve.client.closeStdin();
    await first.serve.client.exited(10_000);

    const second = await serveWith("poll", first.env);
    await deliverAll(second.serve, second.fx, Array.from({ length: 5 }, (_, i) => `after-restart-${i}`));
    expect(second.serve.count(isGap)).toBe(0);
    expect(second.serve.count(isEventFrame("before-restart"))).toBe(0);
  });
});

describe("a runtime subscribe that could never be stored is refused before anything starts", () => {
  test("a key over 65,536 characters: invalid_params, not listed, never polled", async () => {
    const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [])] });
    const serve = StdioServe.start(cleanups, env);
    const big = { project: "p".repeat(70_000) };
    const refused = await serve.command({ type: "mcp_events_subscribe", id: "big", server: "tickets", name: TICKETS, arguments: big, delivery: "poll" });
    expect(refused.success).toBe(false);
    expect(refused.error?.code).toBe("invalid_params");
    expect(refused.error?.message).toContain("at most 65536 can be stored");

    // A normal subscription next to it comes up and polls; the refused one never appears.
    const ok = await serve.command({ type: "mcp_events_subscribe", id: "ok", server: "tickets", name: TICKETS, arguments: { project: "ok" }, delivery: "poll" });
    expect(ok.success).toBe(true);
    await waitFor(async () => (await env.fixture!.state()).polls, { until: (n) => n >= 3, timeoutMs: 10_000, label: "three polls" });
    const list = await serve.command({ type: "mcp_events_list", id: "list" });
    expect(list.data.subscriptions.map((s: { arguments: unknown }) => s.arguments)).toEqual([{ project: "ok" }]);
    expect(list.data.unestablished).toEqual([]);
    const polled = (await env.fixture!.state()).requests.filter((r) => r.method === "events/poll");
    expect(polled.every((r) => (r.params.arguments as { project?: string }).project === "ok")).toBe(true);
    expect(serve.count((f) => isStatus("subscribed")(f) && (f.arguments as { project?: string }).project !== "ok")).toBe(0);
  });
});
