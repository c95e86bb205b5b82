// The supervision state machine of an MCP server (src/mcp/supervision.ts; serve.md §6 item 10):
// pure transitions, the backoff (1 s doubling to 60 s, reset after 10 minutes up), what is reported.
import { describe, expect, test } from "bun:test";
import { SUPERVISION_BACKOFF } from "../../../src/shared/backoff.ts";
import {
  type LinkEvent,
  type Supervision,
  initialSupervision,
  nextSupervision,
  reportSupervision,
  unavailableText,
} from "../../../src/mcp/supervision.ts";

const iso = (ms: number) => new Date(ms).toISOString();
const run = (events: LinkEvent[], start: Supervision = initialSupervision(0)) =>
  events.reduce((s, e) => nextSupervision(s, e, SUPERVISION_BACKOFF), start);
const MINUTE = 60_000;

describe("MCP server supervision", () => {
  test("a first attempt that fails waits 1 s, then each failure doubles the wait", () => {
    let s = run([{ type: "failed", at: 0, error: "refused" }]);
    expect(s.phase).toEqual({ kind: "waiting", since: 0, error: "refused", retryAt: 1000 });
    s = run([{ type: "attempt", at: 1000 }, { type: "failed", at: 1100, error: "refused again" }], s);
    // Down since the first failure; the next wait is 2 s.
    expect(s.phase).toEqual({ kind: "waiting", since: 0, error: "refused again", retryAt: 3100 });
    expect(s.restarts).toBe(1);
    s = run([{ type: "attempt", at: 3100 }, { type: "connected", at: 3200 }], s);
    expect(s.phase).toEqual({ kind: "connected", since: 3200 });
    expect(s.restarts).toBe(2);
  });

  test("a connection that flaps keeps doubling; one up for 10 minutes starts over at 1 s", () => {
    const flapping = run([
      { type: "connected", at: 0 },
      { type: "dropped", at: 10, error: "exit 1" },
      { type: "attempt", at: 1010 },
      { type: "connected", at: 1020 },
      { type: "dropped", at: 1030, error: "exit 1" },
    ]);
    expect(flapping.phase).toMatchObject({ kind: "waiting", since: 1030, retryAt: 1030 + 2000 });
    const healthy = run([{ type: "attempt", at: 3030 }, { type: "connected", at: 3040 }, { type: "dropped", at: 3040 + 10 * MINUTE, error: "exit 1" }], flapping);
    expect(healthy.phase).toMatchObject({ kind: "waiting", retryAt: 3040 + 10 * MINUTE + 1000 });
  });

  test("closed is final: no event restarts a server that is being closed", () => {
    const waiting = run([{ type: "failed", at: 0, error: "x" }]);
    const closed = run([{ type: "close", at: 5 }], waiting);
    expect(closed.phase).toEqual({ kind: "closed", since: 5 });
    for (const e of [
      { type: "attempt", at: 1000 },
      { type: "connected", at: 1000 },
      { type: "failed", at: 1000, error: "y" },
      { type: "dropped", at: 1000, error: "y" },
    ] as LinkEvent[]) {
      expect(nextSupervision(closed, e, SUPERVISION_BACKOFF)).toBe(closed);
    }
  });

  test("events that do not apply leave the state as it is", () => {
    const connected = run([{ type: "connected", at: 0 }]);
    expect(nextSupervision(connected, { type: "attempt", at: 1 }, SUPERVISION_BACKOFF)).toBe(connected);
    expect(nextSupervision(connected, { type: "failed", at: 1, error: "late" }, SUPERVISION_BACKOFF)).toBe(connected);
    const waiting = run([{ type: "failed", at: 0, error: "x" }]);
    expect(nextSupervision(waiting, { type: "dropped", at: 1, error: "late" }, SUPERVISION_BACKOFF)).toBe(waiting);
    expect(nextSupervision(waiting, { type: "connected", at: 1 }, SUPERVISION_BACKOFF)).toBe(waiting);
  });

  test("the report names the state, since when, the error and the time to the next attempt", () => {
    expect(reportSupervision("fs", "stdio", initialSupervision(0), 0, iso)).toEqual({
      name: "fs",
      transport: "stdio",
      state: "connecting",
      since: iso(0),
      restarts: 0,
    });
    const waiting = run([{ type: "failed", at: 0, error: "connection refused" }]);
    const report = reportSupervision("tickets", "http", waiting, 400, iso);
    expect(report).toEqual({
      name: "tickets",
      transport: "http",
      state: "reconnecting",
      since: iso(0),
      error: "connection refused",
      retry_in_ms: 600,
      restarts: 0,
    });
    expect(unavailableText(report)).toBe(`MCP server "tickets" is reconnecting (down since ${iso(0)}: connection refused; next attempt in 600 ms)`);
    const retrying = run([{ type: "attempt", at: 1000 }], waiting);
    expect(reportSupervision("tickets", "http", retrying, 1200, iso)).toMatchObject({ state: "reconnecting", retry_in_ms: 0, restarts: 1 });
    expect(unavailableText(reportSupervision("t", "http", run([{ type: "close", at: 9 }]), 9, iso))).toContain("is closed");
  });
});
