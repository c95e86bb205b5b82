/**
 * The events client's own async roots report to the session's boundary (issue 12 item F, follow-up):
 * an exception escaping the coalescer's timer work, a subscription's loop or a server-connected
 * wake reaches the `onFault` the program passed in — not the process as an unhandled rejection.
 * The coalescer runs on a fake clock against a real store (temp dir); nothing sleeps.
 */
import { afterEach, expect, test } from "bun:test";
import { Coalescer, type InjectTarget } from "../../../src/events/coalescer.ts";
import type { EventsFrame } from "../../../src/events/frames.ts";
import type { SessionState } from "../../../src/events/ports.ts";
import { EventsStore } from "../../../src/events/store/events-store.ts";
import type { SubscriptionHost } from "../../../src/events/subscription/host.ts";
import { Subscription } from "../../../src/events/subscription/subscription.ts";
import { throwAtSessionSeam } from "../../../src/shared/fault-seam.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { tmpDir } from "../../helpers/fixture.ts";
import { waitFor } from "../../helpers/wait.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A session whose model-context bound throws: the coalescer's fire reads it from the timer. */
function brokenSession(): InjectTarget {
  return {
    name: "s",
    state: "idle" as SessionState,
    closed: false,
    get injectionMaxBytes(): number {
      throw new Error("a bug in the session's context bound");
    },
    inject: () => ({ queued: "follow_up" }),
    onRunSettled: () => () => {},
    onReceived: () => () => {},
    emit: (_frame: EventsFrame) => 1,
  };
}

test("an exception in the coalescer's timer work goes to onFault, once, and nothing is injected", async () => {
  const dir = tmpDir("vigil-root-faults");
  cleanups.push(() => dir.cleanup());
  const store = await EventsStore.open(dir.path, { maxPending: 100, maxPendingBytes: 1 << 20 });
  cleanups.push(() => store.close());
  const faults: unknown[] = [];
  const clock = new FakeScheduler();
  const coalescer = new Coalescer(brokenSession(), store, 0, () => {}, clock, 1000, (e) => faults.push(e));
  cleanups.push(() => coalescer.stop());
  store.tryAdd({ action: "follow_up", server: "srv", name: "e", arguments: {}, event: { eventId: "x-1", name: "e", data: {} } });
  coalescer.kick();
  clock.advance(1000);
  await waitFor(() => faults.length > 0, { timeoutMs: 5000, label: "the fault reported" });
  expect(faults).toHaveLength(1);
  expect(String((faults[0] as Error).message)).toContain("context bound");
  // The entry stays pending (on disk) for the session's next start.
  expect(store.pendingCount).toBe(1);
});

test("an exception escaping a subscription's loop goes to the host's fault, and stop() still resolves", async () => {
  const faults: unknown[] = [];
  const host = {
    tuning: { retryCapMs: 1000, refusedRetryMs: 1000, healthyMs: 1000 },
    webhook: { available: false, missing: "--mcp-events-callback-url" },
    wire: () => {
      throw new Error("not connected");
    },
    // A failure is reported through status: a bug there escapes the loop's own code.
    status: () => {
      throw new Error("a bug while reporting the failure");
    },
    fault: (e: unknown) => faults.push(e),
  } as unknown as SubscriptionHost;
  const sub = new Subscription(host, { key: "k", spec: { server: "srv", name: "e", arguments: {}, action: "follow_up" }, origin: "configured", cursor: null, recent: [] });
  sub.start();
  await waitFor(() => faults.length > 0, { timeoutMs: 5000, label: "the loop's fault reported" });
  expect(String((faults[0] as Error).message)).toContain("reporting the failure");
  await sub.stop();
  expect(faults).toHaveLength(1);
});

test("the seam throws once per process, only for the session and point it names", () => {
  const env = { VIGIL_TEST_SESSION_THROW: "ev:coalescer_fire" };
  expect(() => throwAtSessionSeam("other", "coalescer_fire", env)).not.toThrow();
  expect(() => throwAtSessionSeam("ev", "run_settled", env)).not.toThrow();
  expect(() => throwAtSessionSeam("ev", "coalescer_fire", env)).toThrow("VIGIL_TEST_SESSION_THROW: a test exception at coalescer_fire");
  expect(() => throwAtSessionSeam("ev", "coalescer_fire", env)).not.toThrow();
});
