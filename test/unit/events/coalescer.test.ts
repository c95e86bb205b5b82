/**
 * The coalescer against a real EventsStore (temp dir) and a fake session: batching, holding
 * follow-ups while busy, delivery and return by tag, the drop after 3 attempts, and stop.
 *
 * Its timers run on a fake clock the tests advance: nothing here sleeps. The only real waits are
 * for the store's disk writes (a batch is injected once it is durable), each bounded.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Coalescer, type InjectTarget, MAX_ATTEMPTS, MAX_BATCH } from "../../../src/events/coalescer.ts";
import { EventsStore } from "../../../src/events/store/events-store.ts";
import type { Injection, RunSettled, SessionState } from "../../../src/events/ports.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { tmpDir } from "../../helpers/fixture.ts";
import { waitFor } from "../../helpers/wait.ts";

const dirs: { cleanup(): void }[] = [];
const stores: EventsStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {});
  for (const d of dirs.splice(0)) d.cleanup();
});

class FakeSession implements InjectTarget {
  state: SessionState = "idle";
  closed = false;
  readonly injected: (Injection & { logAtInject: string })[] = [];
  private listener: ((r: RunSettled) => void) | null = null;

  constructor(private readonly logFile: string) {}

  inject(injection: Injection) {
    // What is on disk when the model would first see the batch.
    this.injected.push({ ...injection, logAtInject: existsSync(this.logFile) ? readFileSync(this.logFile, "utf8") : "" });
    return { queued: injection.behavior } as const;
  }

  onRunSettled(listener: (r: RunSettled) => void) {
    this.listener = listener;
    return () => void (this.listener = null);
  }

  settle(delivered: string[], returned: string[], status: RunSettled["status"] = "ok") {
    this.listener?.({ runId: "r", status, succeeded: status === "ok", delivered, returned });
  }
}

async function setup(windowMs = 0) {
  const dir = tmpDir("vigil-coalescer");
  dirs.push(dir);
  const store = await EventsStore.open(dir.path, { maxPending: 1000, maxPendingBytes: 16 * 1024 * 1024 });
  stores.push(store);
  const session = new FakeSession(join(dir.path, "mcp-events.log"));
  const dropped: string[] = [];
  const clock = new FakeScheduler();
  const coalescer = new Coalescer(session, store, windowMs, (entry) => dropped.push(String((entry.event as { eventId?: string }).eventId)), clock);
  const add = (id: string, action: "follow_up" | "steer" = "follow_up") => {
    store.tryAdd({ action, server: "s", name: "e", arguments: {}, event: { eventId: id, name: "e", data: { id } } });
    coalescer.kick();
  };
  /**
   * Resolves true once `done` holds, advancing the fake clock past the settle time on every look
   * (a timer armed meanwhile fires on the next); the real wait is for the store's commits only.
   */
  const until = async (done: () => boolean): Promise<boolean> => {
    await waitFor(() => (clock.advance(SETTLE_MS), done()), { timeoutMs: 5000, label: "the coalescer to get there" });
    return true;
  };
  return { store, session, coalescer, dropped, add, clock, until, logFile: join(dir.path, "mcp-events.log") };
}

/** The coalescer's settle time (its SETTLE_MS); advancing by it fires any timer it armed. */
const SETTLE_MS = 250;

test("a burst becomes one batch, injected only after it is durable", async () => {
  const { session, add, coalescer, until } = await setup();
  for (const id of ["a-1", "a-2", "a-3"]) add(id);
  expect(await until(() => session.injected.length === 1)).toBe(true);
  const batch = session.injected[0]!;
  expect(batch.behavior).toBe("follow_up");
  expect(batch.text.startsWith("[MCP events · batch ")).toBe(true);
  for (const id of ["a-1", "a-2", "a-3"]) {
    expect(batch.text).toContain(id);
    expect(batch.logAtInject).toContain(`"eventId":"${id}"`);
  }
  coalescer.stop();
});

test("follow-ups are held while a run is in flight and released after it", async () => {
  const { session, add, store, coalescer, clock, until } = await setup();
  session.state = "running";
  add("held-1");
  add("held-2");
  // Nothing goes in while busy: the settle timer fires and holds them. A commit asked for now ends
  // after any the coalescer started, so a batch that (wrongly) went ahead would be injected by then.
  clock.advance(1000);
  await store.commit();
  expect(session.injected).toHaveLength(0);
  session.state = "idle";
  session.settle([], []);
  expect(await until(() => session.injected.length === 1)).toBe(true);
  expect(session.injected[0]!.text).toContain("held-1");
  expect(session.injected[0]!.text).toContain("held-2");
  coalescer.stop();
});

test("steer events go in even while a run is in flight", async () => {
  const { session, add, coalescer, until } = await setup();
  session.state = "running";
  add("steer-1", "steer");
  expect(await until(() => session.injected.length === 1)).toBe(true);
  expect(session.injected[0]!.behavior).toBe("steer");
  coalescer.stop();
});

test("a delivered tag leaves the queue durably; a returned one is injected again", async () => {
  const { session, add, store, coalescer, until, logFile } = await setup();
  add("d-1");
  expect(await until(() => session.injected.length === 1)).toBe(true);
  session.settle([], [session.injected[0]!.tag], "failed");
  expect(await until(() => session.injected.length === 2)).toBe(true);
  expect(session.injected[1]!.text).toContain("d-1");
  expect(session.injected[1]!.tag).not.toBe(session.injected[0]!.tag);
  session.settle([session.injected[1]!.tag], []);
  expect(await until(() => store.pendingCount === 0)).toBe(true);
  await store.commit();
  expect(readFileSync(logFile, "utf8")).toContain('{"done":[1]}');
  coalescer.stop();
});

test(`an event returned ${MAX_ATTEMPTS} times is dropped and reported`, async () => {
  const { session, add, store, dropped, coalescer, clock, until } = await setup();
  add("poison");
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    expect(await until(() => session.injected.length === attempt)).toBe(true);
    session.settle([], [session.injected[attempt - 1]!.tag], "failed");
  }
  expect(await until(() => dropped.length === 1)).toBe(true);
  expect(dropped).toEqual(["poison"]);
  expect(store.pendingCount).toBe(0);
  clock.advance(1000);
  await store.commit();
  expect(session.injected).toHaveLength(MAX_ATTEMPTS);
  coalescer.stop();
});

test(`a batch carries at most ${MAX_BATCH} events; the rest follow in the next`, async () => {
  const { session, add, coalescer, until } = await setup();
  for (let i = 0; i < MAX_BATCH + 7; i++) add(`many-${i}`);
  expect(await until(() => session.injected.length === 2)).toBe(true);
  expect(session.injected[0]!.text).toContain(`many-${MAX_BATCH - 1}"`);
  expect(session.injected[0]!.text).not.toContain(`many-${MAX_BATCH}"`);
  expect(session.injected[1]!.text).toContain(`many-${MAX_BATCH + 6}"`);
  coalescer.stop();
});

test("after stop nothing more is injected", async () => {
  const { session, add, store, coalescer, clock } = await setup(200);
  add("late-1");
  coalescer.stop();
  clock.advance(400);
  await store.commit();
  expect(session.injected).toHaveLength(0);
});
