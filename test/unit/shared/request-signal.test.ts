/**
 * shared/request-signal.ts and shared/single-flight.ts (issue 12 item D): a request's own signal
 * follows its parent only while the request is in flight; a shared call is given up only when
 * every caller that joined it has given up.
 */
import { expect, test } from "bun:test";
import { withRequestSignal } from "../../../src/shared/request-signal.ts";
import { SingleFlight } from "../../../src/shared/single-flight.ts";

test("the request's signal aborts with its parent while in flight, and no longer once settled", async () => {
  const parent = new AbortController();
  let seen: AbortSignal | undefined;
  await withRequestSignal(parent.signal, async (own) => {
    seen = own;
  });
  parent.abort(new Error("late"));
  expect(seen!.aborted).toBe(false);

  const second = new AbortController();
  const inFlight = withRequestSignal(second.signal, (own) => new Promise((_, reject) => own.addEventListener("abort", () => reject(own.reason))));
  second.abort(new Error("stop"));
  await expect(inFlight).rejects.toThrow("stop");
});

test("an already aborted parent hands the request an aborted signal", async () => {
  const parent = new AbortController();
  parent.abort(new Error("gone"));
  expect(await withRequestSignal(parent.signal, async (own) => own.aborted)).toBe(true);
});

test("single-flight: callers of one key share a call; another key waits for it; the call is aborted only when all gave up", async () => {
  const flight = new SingleFlight<string>();
  const starts: AbortSignal[] = [];
  let finish!: (v: string) => void;
  const start = (signal: AbortSignal) => {
    starts.push(signal);
    return new Promise<string>((resolve, reject) => {
      finish = resolve;
      signal.addEventListener("abort", () => reject(signal.reason));
    });
  };
  const a = new AbortController();
  const b = new AbortController();
  const pa = flight.run(1, start, a.signal);
  const pb = flight.run(1, start, b.signal);
  pa.catch(() => {});
  await Promise.resolve();
  expect(starts).toHaveLength(1);
  a.abort(new Error("a left"));
  await expect(pa).rejects.toThrow("a left");
  expect(starts[0]!.aborted).toBe(false);

  const later = flight.run(2, async () => "fresh");
  await Promise.resolve();
  expect(starts).toHaveLength(1);
  finish("shared");
  expect(await pb).toBe("shared");
  expect(await later).toBe("fresh");
  expect(flight.busy).toBe(false);

  const c = new AbortController();
  const pc = flight.run(3, start, c.signal);
  pc.catch(() => {});
  await Promise.resolve();
  c.abort(new Error("c left"));
  await expect(pc).rejects.toThrow("c left");
  expect(starts.at(-1)!.aborted).toBe(true);
});
