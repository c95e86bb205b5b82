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
import type { EventsFrame } from "../../../src/events/frames.ts";
import { type Injection, MODEL_UNAVAILABLE, type RunSettled, type SessionState } from "../../../src/events/ports.ts";
import { type BatchEntry, renderBatch } from "../../../src/events/rules/batch-text.ts";
import { TUNING_KNOBS } from "../../../src/serve/config/tuning.ts";
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
  /** The session's model context bound for one batch (none: unbounded). */
  injectionMaxBytes?: number;
  readonly injected: (Injection & { logAtInject: string })[] = [];
  readonly frames: EventsFrame[] = [];
  private listener: ((r: RunSettled) => void) | null = null;
  private receiver: ((tags: string[], runId: string) => void) | null = null;

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

  onReceived(listener: (tags: string[], runId: string) => void) {
    this.receiver = listener;
    return () => void (this.receiver = null);
  }

  emit(frame: EventsFrame) {
    this.frames.push(frame);
    return this.frames.length;
  }

  settle(delivered: string[], returned: string[], status: RunSettled["status"] = "ok", code?: string) {
    this.listener?.({ runId: "r", status, succeeded: status === "ok", delivered, returned, ...(code === undefined ? {} : { code, error: "model HTTP 503" }) });
  }

  /** The model answered a turn carrying these steered batches. */
  receive(tags: string[]) {
    this.receiver?.(tags, "r");
  }
}

async function setup(windowMs = 0, o: { backoffCapMs?: number; dir?: { path: string; cleanup(): void } } = {}) {
  const dir = o.dir ?? tmpDir("vigil-coalescer");
  dirs.push(dir);
  const store = await EventsStore.open(dir.path, { maxPending: 1000, maxPendingBytes: 16 * 1024 * 1024 });
  stores.push(store);
  const session = new FakeSession(join(dir.path, "mcp-events.log"));
  const dropped: string[] = [];
  const clock = new FakeScheduler();
  const coalescer = new Coalescer(session, store, windowMs, (entry) => dropped.push(String((entry.event as { eventId?: string }).eventId)), clock, o.backoffCapMs ?? TUNING_KNOBS.modelBackoffCapMs.default);
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
  return { store, session, coalescer, dropped, add, clock, until, dir, logFile: join(dir.path, "mcp-events.log") };
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

test("a run aborted because its session is closing counts no attempt (a graceful exit is not the batch's fault)", async () => {
  const { session, add, store, coalescer, until } = await setup();
  add("survivor");
  expect(await until(() => session.injected.length === 1)).toBe(true);
  session.closed = true;
  session.settle([], [session.injected[0]!.tag], "aborted");
  expect(store.attemptsOf(1)).toBe(0);
  // A client's abort of a run in an open session still counts.
  session.closed = false;
  expect(await until(() => session.injected.length === 2)).toBe(true);
  session.settle([], [session.injected[1]!.tag], "aborted");
  expect(store.attemptsOf(1)).toBe(1);
  coalescer.stop();
});

test("a batch returned by a run that succeeded without seeing it (a steer after its last turn) counts no attempt and goes again", async () => {
  const { session, add, store, dropped, coalescer, until } = await setup();
  add("late-steer");
  for (let round = 1; round <= MAX_ATTEMPTS + 1; round++) {
    expect(await until(() => session.injected.length === round)).toBe(true);
    session.settle([], [session.injected[round - 1]!.tag], "ok");
    expect(store.attemptsOf(1)).toBe(0);
  }
  expect(dropped).toEqual([]);
  expect(store.pendingCount).toBe(1);
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

test("a batch that does not fit the session's model context is split: 10 events where 3 fit go in batches of at most 3, in order, none dropped", async () => {
  const { session, store, dropped, coalescer, until } = await setup();
  const ids = Array.from({ length: 10 }, (_, i) => `fit-${i}`);
  const entry = (id: string): BatchEntry => ({ server: "s", name: "e", arguments: {}, event: { eventId: id, name: "e", data: { blob: "y".repeat(1000) } } });
  // Room for three events as sent (JSON-encoded), plus the headline's slack, and not a fourth.
  const three = Buffer.byteLength(JSON.stringify(renderBatch(999, ids.slice(0, 3).map(entry))), "utf8");
  session.injectionMaxBytes = three + 200;
  for (const id of ids) store.tryAdd({ action: "follow_up", server: "s", name: "e", arguments: {}, event: entry(id).event });
  coalescer.kick();

  const delivered: string[] = [];
  for (let n = 1; delivered.length < ids.length; n++) {
    expect(await until(() => session.injected.length === n)).toBe(true);
    const batch = session.injected[n - 1]!;
    const inBatch = [...batch.text.matchAll(/event_id="(fit-\d+)"/g)].map((m) => m[1]!);
    expect(inBatch.length).toBeGreaterThan(0);
    expect(inBatch.length).toBeLessThanOrEqual(3);
    expect(Buffer.byteLength(JSON.stringify(batch.text), "utf8")).toBeLessThanOrEqual(session.injectionMaxBytes);
    // Whole events: nothing is cut to make a batch fit when a smaller batch does.
    expect(batch.text).not.toContain("[truncated");
    delivered.push(...inBatch);
    session.settle([batch.tag], []);
  }
  expect(session.injected.map((b) => [...b.text.matchAll(/event_id="/g)].length)).toEqual([3, 3, 3, 1]);
  expect(delivered).toEqual(ids);
  expect(await until(() => store.pendingCount === 0)).toBe(true);
  expect(dropped).toEqual([]);
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

test("runs that find the model unavailable count no attempt: the batch waits out a doubling backoff and is never dropped", async () => {
  const { session, add, store, dropped, coalescer, clock, until } = await setup(0, { backoffCapMs: 4000 });
  add("outage-1");
  const outages = MAX_ATTEMPTS + 3;
  for (let n = 1; n <= outages; n++) {
    expect(await until(() => session.injected.length === n)).toBe(true);
    session.settle([], [session.injected[n - 1]!.tag], "failed", MODEL_UNAVAILABLE);
  }
  // 1 s, 2 s, 4 s, then the cap.
  const waits = session.frames.filter((f) => f.type === "model_unavailable").map((f) => (f as { retry_in_ms: number }).retry_in_ms);
  expect(waits).toEqual([1000, 2000, 4000, 4000, 4000, 4000]);
  expect(session.frames.at(-1)).toEqual({ type: "model_unavailable", error: "model HTTP 503", retry_in_ms: 4000 });
  // Nothing goes in before the wait is over; right after it, the batch does.
  clock.advance(3999);
  await store.commit();
  expect(session.injected).toHaveLength(outages);
  expect(await until(() => session.injected.length === outages + 1)).toBe(true);
  expect(dropped).toEqual([]);
  expect(store.attemptsOf(1)).toBe(0);
  // The model answers: the outage is over, and the batch is delivered.
  session.settle([session.injected[outages]!.tag], []);
  expect(session.frames.at(-1)).toEqual({ type: "model_available" });
  expect(await until(() => store.pendingCount === 0)).toBe(true);
  coalescer.stop();
});

test("after an outage ends the backoff starts again from 1 s", async () => {
  const { session, add, coalescer, until } = await setup(0, { backoffCapMs: 60_000 });
  add("o-1");
  for (let n = 1; n <= 2; n++) {
    expect(await until(() => session.injected.length === n)).toBe(true);
    session.settle([], [session.injected[n - 1]!.tag], "failed", MODEL_UNAVAILABLE);
  }
  expect(await until(() => session.injected.length === 3)).toBe(true);
  // A failure after the model answered ends the outage (and counts an attempt).
  session.settle([], [session.injected[2]!.tag], "failed");
  expect(session.frames.at(-1)).toEqual({ type: "model_available" });
  expect(await until(() => session.injected.length === 4)).toBe(true);
  session.settle([], [session.injected[3]!.tag], "failed", MODEL_UNAVAILABLE);
  expect((session.frames.at(-1) as { retry_in_ms: number }).retry_in_ms).toBe(1000);
  coalescer.stop();
});

test("attempts are in the pending log: a reopened store carries them and the bound still holds", async () => {
  const first = await setup();
  first.add("poison");
  for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
    expect(await first.until(() => first.session.injected.length === attempt)).toBe(true);
    first.session.settle([], [first.session.injected[attempt - 1]!.tag], "failed");
  }
  await first.store.commit();
  expect(readFileSync(first.logFile, "utf8")).toContain(`{"attempts":[[1,${MAX_ATTEMPTS - 1}]]}`);
  first.coalescer.stop();
  await first.store.close();
  // A restart: a new store and coalescer on the same directory.
  const second = await setup(0, { dir: first.dir });
  expect(second.store.attemptsOf(1)).toBe(MAX_ATTEMPTS - 1);
  second.coalescer.kick();
  expect(await second.until(() => second.session.injected.length === 1)).toBe(true);
  second.session.settle([], [second.session.injected[0]!.tag], "failed");
  expect(await second.until(() => second.dropped.length === 1)).toBe(true);
  expect(second.store.pendingCount).toBe(0);
  second.coalescer.stop();
});

test("a steered batch the model received is done and committed at once; its run failing later returns nothing", async () => {
  const { session, add, store, coalescer, clock, until, logFile } = await setup();
  session.state = "running";
  add("steer-r", "steer");
  expect(await until(() => session.injected.length === 1)).toBe(true);
  const tag = session.injected[0]!.tag;
  session.receive([tag]);
  expect(store.pendingCount).toBe(0);
  await store.commit();
  expect(readFileSync(logFile, "utf8")).toContain('{"done":[1]}');
  // The run fails afterwards and names the batch as returned: it is not injected again.
  session.state = "idle";
  session.settle([], [tag], "failed");
  clock.advance(5000);
  await store.commit();
  expect(session.injected).toHaveLength(1);
  coalescer.stop();
});

test("entries a commit already made durable go in without waiting for another; counted attempts are durable first", async () => {
  const { session, store, add, coalescer, until } = await setup();
  const syncsAtInject: number[] = [];
  const inject = session.inject.bind(session);
  // Like a real session: a follow-up batch starts a run, and the session is idle again once it settled.
  session.inject = (injection) => {
    syncsAtInject.push(store.writes.logSyncs);
    session.state = "running";
    return inject(injection);
  };
  const settle = (delivered: string[], returned: string[], status?: RunSettled["status"]) => {
    session.state = "idle";
    session.settle(delivered, returned, status);
  };
  for (let i = 1; i <= MAX_BATCH + 10; i++) add(`d-${i}`);
  // The first batch's commit covered all 60 entries.
  expect(await until(() => session.injected.length === 1)).toBe(true);
  const before = store.writes.logSyncs;
  // Delivered: its done records start a commit; the next batch (durable already) does not wait for it.
  settle([session.injected[0]!.tag], []);
  expect(await until(() => session.injected.length === 2)).toBe(true);
  expect(syncsAtInject[1]).toBe(before);
  expect(session.injected[1]!.text).toContain('event_id="d-51"');
  // Returned by a failed run: its attempts counts are synced before the batch goes in again.
  settle([], [session.injected[1]!.tag], "failed");
  expect(await until(() => session.injected.length === 3)).toBe(true);
  expect(session.injected[2]!.logAtInject).toContain(`"attempts":[[${MAX_BATCH + 1},1]`);
  coalescer.stop();
});
