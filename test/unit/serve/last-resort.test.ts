/**
 * serve's last resort (src/serve/last-resort.ts): an error that escaped every containment boundary
 * is said on stderr with its stack and decides a shutdown once; later ones are only said. Driven
 * through an EventEmitter standing in for `process`. (The lines go through logLine, which scrubs.)
 */
import { expect, test } from "bun:test";
import { EventEmitter } from "node:events";
import { onLastResort } from "../../../src/serve/last-resort.ts";

test("the first escaped error is fatal once, every one is said, and uninstalling detaches", () => {
  const target = new EventEmitter();
  const fatal: unknown[] = [];
  const lines: string[] = [];
  const off = onLastResort((e) => fatal.push(e), target, (line) => lines.push(line));
  target.emit("unhandledRejection", new Error("first"));
  target.emit("uncaughtException", new Error("second"));
  expect(fatal).toHaveLength(1);
  expect((fatal[0] as Error).message).toBe("first");
  expect(lines.filter((l) => l.includes("escaped every containment boundary"))).toHaveLength(2);
  expect(lines.some((l) => l.includes("an unhandled rejection") && l.includes("Error: first"))).toBe(true);
  expect(lines.some((l) => l.includes("an uncaught exception") && l.includes("Error: second"))).toBe(true);
  expect(lines.filter((l) => l.includes("exit 70"))).toHaveLength(1);
  off();
  expect(target.listenerCount("unhandledRejection")).toBe(0);
  expect(target.listenerCount("uncaughtException")).toBe(0);
});
