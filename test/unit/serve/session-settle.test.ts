/** The end-of-run accounting of injected batches and steers (serve.md §5, §6 item 5). */
import { describe, expect, test } from "bun:test";
import { settleRun } from "../../../src/serve/session/settle.ts";

const tagged = (tag: string) => ({ text: tag, tag });
const client = (text: string) => ({ text });

describe("settleRun", () => {
  test("succeeded: prompt batches and seen steers are delivered, unseen taken batches are returned", () => {
    const r = settleRun({
      prompt: [tagged("a"), client("hi")],
      taken: [tagged("s1"), client("steer"), tagged("s2")],
      steersSeen: 1,
      leftover: [tagged("late")],
      succeeded: true,
    });
    expect(r.delivered).toEqual(["a", "s1"]);
    expect(r.returned).toEqual(["s2"]);
    expect(r.requeue).toEqual([client("steer"), tagged("late")]);
  });

  test("not succeeded: every batch handed to the run is returned", () => {
    const r = settleRun({ prompt: [tagged("a"), client("hi")], taken: [tagged("s1"), client("x")], steersSeen: 2, leftover: [], succeeded: false });
    expect(r.delivered).toEqual([]);
    expect(r.returned).toEqual(["a", "s1"]);
    expect(r.requeue).toEqual([]);
  });

  test("steersSeen is clamped to what was taken", () => {
    expect(settleRun({ prompt: [], taken: [tagged("s")], steersSeen: 9, leftover: [], succeeded: true }).delivered).toEqual(["s"]);
    expect(settleRun({ prompt: [], taken: [tagged("s")], steersSeen: -3, leftover: [], succeeded: true }).returned).toEqual(["s"]);
    expect(settleRun({ prompt: [], taken: [tagged("s")], steersSeen: Number.NaN, leftover: [], succeeded: true }).returned).toEqual(["s"]);
  });
});
