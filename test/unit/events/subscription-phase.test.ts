import { describe, expect, test } from "bun:test";
import {
  type Phase,
  STARTING,
  afterFailure,
  afterStop,
  isComeback,
  isLive,
  lastErrorOf,
  lastUpAt,
  reportedState,
} from "../../../src/events/subscription/phase.ts";

const transient = { message: "connect refused", refused: false, ended: false };
const refusal = { message: "unknown event", refused: true, ended: false };
const ended = { message: "terminated", refused: false, ended: true };

describe("subscription phase", () => {
  test("each phase reports the state of notes §2.2 (a standing refusal is retrying) and its last error", () => {
    const up: Phase = { kind: "up", since: 5 };
    const phases: Phase[] = [STARTING, up, afterFailure(up, transient), afterFailure(up, refusal), afterStop(up), { kind: "terminated", lastError: "gone" }];
    expect(phases.map(reportedState)).toEqual(["starting", "active", "retrying", "retrying", "stopped", "terminated"]);
    expect(phases.map(lastErrorOf)).toEqual([null, null, "connect refused", "unknown event", null, "gone"]);
    expect(phases.map(isLive)).toEqual([true, true, true, false, false, false]);
  });

  test("a refusal stands through later failures until the subscription is up again", () => {
    const refused = afterFailure(STARTING, refusal);
    const retried = afterFailure(refused, transient);
    expect(retried.kind).toBe("refused");
    expect(lastErrorOf(retried)).toBe("connect refused");
    expect(afterFailure({ kind: "up", since: 1 }, transient).kind).toBe("retrying");
  });

  test("coming back up is a comeback only after the server ended it, and only if it was up before", () => {
    const up: Phase = { kind: "up", since: 7 };
    expect(isComeback(afterFailure(up, transient))).toBe(false);
    const endedOnce = afterFailure(up, ended);
    expect(isComeback(endedOnce)).toBe(true);
    // Still a comeback after further transient failures; the time it was last up is kept throughout.
    const later = afterFailure(endedOnce, transient);
    expect(isComeback(later)).toBe(true);
    expect(lastUpAt(later)).toBe(7);
    // Ended before it was ever up: no comeback.
    expect(isComeback(afterFailure(STARTING, ended))).toBe(false);
    expect(lastUpAt(afterFailure(STARTING, ended))).toBeNull();
  });

  test("stop keeps a terminated subscription terminated and keeps the last error", () => {
    const terminated: Phase = { kind: "terminated", lastError: "gone" };
    expect(afterStop(terminated)).toBe(terminated);
    expect(afterStop(afterFailure(STARTING, transient))).toEqual({ kind: "stopped", lastError: "connect refused" });
  });
});
