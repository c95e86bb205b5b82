/**
 * Containment and bounds of `vigil serve` (issue 12 item F): the restart backoff (pure), the
 * restart scheduler on a fake clock, the `/v1/health` judgement, the session boundary on a real
 * Session (files in a temp dir), and `--max-sessions` in the flags.
 */
import { describe, expect, test } from "bun:test";
import { healthReport, type ServerState } from "../../../src/serve/daemon/health.ts";
import { SessionRestarts } from "../../../src/serve/daemon/restarts.ts";
import { planServe, parseServeArgs } from "../../../src/serve/flags.ts";
import { nextRestart } from "../../../src/serve/restart-backoff.ts";
import { SUPERVISION_BACKOFF } from "../../../src/shared/backoff.ts";
import { SessionFaults } from "../../../src/serve/session-faults.ts";
import { Session } from "../../../src/serve/session/session.ts";
import type { TranscriptRecord } from "../../../src/serve/state/transcript.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { unitSessions } from "../../helpers/unit-sessions.ts";
import { waitFor } from "../../helpers/wait.ts";

describe("restart backoff", () => {
  test("1 s, doubling to 60 s; reset after 10 minutes up", () => {
    const delays: number[] = [];
    let state: { inARow: number; startedAt: number } | undefined;
    let now = 0;
    for (let i = 0; i < 9; i++) {
      const next = nextRestart(state, now);
      delays.push(next.delayMs);
      now += next.delayMs;
      state = { inARow: next.inARow, startedAt: now };
      now += 5; // fails again soon after
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]);
    const { capMs, healthyMs } = SUPERVISION_BACKOFF;
    expect(nextRestart({ inARow: 8, startedAt: 0 }, healthyMs - 1).delayMs).toBe(capMs);
    expect(nextRestart({ inARow: 8, startedAt: 0 }, healthyMs)).toEqual({ inARow: 0, delayMs: 1000 });
  });

  test("the scheduler reopens after the delay, retries a failed reopen with a longer one, and stops", async () => {
    const clock = new FakeScheduler();
    const reopened: string[] = [];
    let fail = true;
    const r = new SessionRestarts(async (name) => {
      reopened.push(name);
      if (fail) throw new Error("EMFILE: too many open files");
    }, clock);
    expect(r.failed("ev")).toBe(1000);
    expect(r.failed("ev")).toBeNull(); // already scheduled
    expect(r.restartInMs("ev")).toBe(1000);
    clock.advance(999);
    expect(reopened).toEqual([]);
    clock.advance(1);
    await waitFor(() => r.restartInMs("ev") !== undefined, { timeoutMs: 1000, label: "the retry scheduled" });
    expect(reopened).toEqual(["ev"]);
    expect(r.restartInMs("ev")).toBe(2000);
    fail = false;
    clock.advance(2000);
    await waitFor(() => reopened.length === 2, { timeoutMs: 1000, label: "the second reopen" });
    expect(r.restartInMs("ev")).toBeUndefined();
    // Up 10 minutes: the next failure starts over at 1 s.
    clock.advance(SUPERVISION_BACKOFF.healthyMs);
    expect(r.failed("ev")).toBe(1000);
    r.stop();
    expect(r.restartInMs("ev")).toBeUndefined();
    clock.advance(60_000);
    expect(reopened.length).toBe(2);
    expect(r.failed("ev")).toBeNull();
  });
});

describe("/v1/health", () => {
  const server = (state: ServerState["state"], extra: Partial<ServerState> = {}): ServerState => ({
    name: "tickets", transport: "http", state, since: "2026-01-01T00:00:00.000Z", restarts: 0, ...extra,
  });
  const facts = { servers: [server("connected")], sessions: 3, maxSessions: 10, eventsSession: "mcp-events", eventsSessionRunning: true };

  test("ok with no reasons while all is well", () => {
    expect(healthReport(facts)).toEqual({ ok: true, reasons: [] });
    expect(healthReport({ ...facts, eventsSession: null, eventsSessionRunning: false })).toEqual({ ok: true, reasons: [] });
  });

  test("each problem is a reason", () => {
    const r = healthReport({
      ...facts,
      servers: [server("reconnecting", { error: "connect ECONNREFUSED", retry_in_ms: 4000 }), server("connected", { name: "fs" })],
      sessions: 10,
      eventsSessionRunning: false,
      eventsRestartInMs: 1500,
    });
    expect(r.ok).toBe(false);
    expect(r.reasons).toEqual([
      'MCP server "tickets" is reconnecting: connect ECONNREFUSED (retry in 4 s)',
      "sessions at the cap: 10 of --max-sessions 10 (new sessions get 503 too_many_sessions)",
      'the events session "mcp-events" is not running (restarting in 2 s)',
    ]);
  });
});

describe("the session boundary", () => {
  const sessions = unitSessions("vigil-containment");
  const okRunner = async () => ({ status: "ok" as const, appended: [], steersSeen: 0 });

  async function contained(throwing: (s: Session) => void) {
    const closed: string[] = [];
    const ended: [string, boolean][] = [];
    let session!: Session;
    const faults = new SessionFaults({
      close: async (name) => {
        closed.push(name);
        await session.close();
      },
      restartsAfterFailure: (name) => name === "s1",
    });
    faults.onEnded((name, restart) => ended.push([name, restart]));
    session = sessions.track(await Session.open({ name: "s1", dir: sessions.dir("s1"), runner: okRunner, onFault: (e) => void faults.contain("s1", session, e) }));
    const frames: TranscriptRecord[] = [];
    session.subscribe((f) => frames.push(f));
    throwing(session);
    const r = await session.handle({ type: "prompt", id: "p1", message: "hi" });
    expect(r.success).toBe(true);
    await waitFor(() => ended.length > 0, { timeoutMs: 5000, label: "the session ended" });
    return { frames, closed, ended, session };
  }

  test("a run-settled listener that throws ends the session: error frame, closed, told to restart", async () => {
    const { frames, closed, ended, session } = await contained((s) =>
      s.onRunSettled(() => {
        throw new Error("listener exploded");
      }),
    );
    const error = frames.find((f) => f.type === "error");
    expect(error).toMatchObject({ type: "error", code: "session_crashed" });
    expect(String(error!.message)).toContain("listener exploded");
    expect(typeof error!.seq).toBe("number"); // stored: a client replaying sees why it ended
    expect(closed).toEqual(["s1"]);
    expect(ended).toEqual([["s1", true]]);
    expect(session.closed).toBe(true);
  });
});

describe("--max-sessions", () => {
  const plan = (...args: string[]) => planServe(parseServeArgs(args));
  test("default 1000; a value 1..1e6 with --listen; refused otherwise", () => {
    expect(plan("--listen", "8080").mode).toMatchObject({ kind: "daemon", maxSessions: 1000 });
    expect(plan("--listen", "8080", "--max-sessions", "5").mode).toMatchObject({ maxSessions: 5 });
    for (const bad of ["0", "-1", "1.5", "abc", "1000001"]) {
      expect(() => plan("--listen", "8080", "--max-sessions", bad)).toThrow("--max-sessions: expected a whole number from 1 to 1000000");
    }
    expect(() => plan("--max-sessions", "5")).toThrow("requires --listen");
  });
});
