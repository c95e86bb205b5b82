/** shared/signals.ts: the one way handlers are installed and removed. */
import { expect, test } from "bun:test";
import { ENDING_SIGNALS, onSignals } from "../../../src/shared/signals.ts";

test("handlers see each signal's number and name, repeatedly, until removed", () => {
  const seen: [number, string][] = [];
  const before = { hup: process.listenerCount("SIGHUP"), term: process.listenerCount("SIGTERM") };
  const off = onSignals(ENDING_SIGNALS, (signo, name) => seen.push([signo, name]));
  expect(process.listenerCount("SIGHUP")).toBe(before.hup + 1);
  process.emit("SIGHUP");
  process.emit("SIGHUP");
  process.emit("SIGTERM");
  off();
  expect(process.listenerCount("SIGHUP")).toBe(before.hup);
  expect(process.listenerCount("SIGTERM")).toBe(before.term);
  process.emit("SIGINT");
  expect(seen).toEqual([
    [1, "SIGHUP"],
    [1, "SIGHUP"],
    [15, "SIGTERM"],
  ]);
});
