/** The session of `vigil serve` (serve.md §4, §5, §6 item 5) with a scripted fake runner, on real files. */
import { describe, expect, test } from "bun:test";
import type { ChatMessage } from "../../../src/serve/models/types.ts";
import type { Command } from "../../../src/serve/protocol/commands.ts";
import { type FrameBody, messageFrame, okResponse, runEndFrame, runStartFrame } from "../../../src/serve/protocol/frames.ts";
import type { TranscriptRecord } from "../../../src/serve/state/transcript.ts";
import { EVENTS_NOT_ENABLED_MESSAGE, Session, SessionClosedError } from "../../../src/serve/session/session.ts";
import type { RunOutcome, RunRequest, RunSettled, Runner } from "../../../src/serve/session/types.ts";
import { unitSessions } from "../../helpers/unit-sessions.ts";
import { waitFor } from "../../helpers/wait.ts";

// ---- harness ----

interface Gate {
  promise: Promise<void>;
  release(): void;
}
function gate(): Gate {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}

/** Waits (bounded) for the session to get somewhere; a run's settlement is only observable this way. */
const settledWhen = (done: () => boolean, what: string) => waitFor(done, { timeoutMs: 3000, label: what, intervalMs: 5 });

interface RunCtx {
  req: RunRequest;
  emit: (f: FrameBody) => void;
  signal: AbortSignal;
}
type Script = (ctx: RunCtx) => Promise<RunOutcome>;

/** The default run: run_start, a user message per prompt message (and per steer, as run-loop.ts), an assistant echo, run_end ok. */
async function echo({ req, emit }: RunCtx, extra: ChatMessage[] = [], steersSeen = 0): Promise<RunOutcome> {
  for (const m of extra) if (m.role === "user") emit(messageFrame("user", m.text));
  const reply = `echo: ${[...req.prompt, ...extra].map((m) => m.text).join(" | ")}`;
  emit(messageFrame("assistant", reply));
  emit(runEndFrame(req.runId, "ok"));
  return { status: "ok", appended: [...extra, { role: "assistant", text: reply }], steersSeen };
}

class FakeRunner {
  readonly calls: RunRequest[] = [];
  private readonly scripts: Script[] = [];
  settledRuns = 0;

  /** The script of the next run (runs without a script echo). */
  next(script: Script): void {
    this.scripts.push(script);
  }

  /** A run that blocks until released (or aborted), then echoes; `onTurn` runs before it ends. */
  blocking(): { started: Gate; release: Gate } {
    const started = gate();
    const release = gate();
    this.next(async (ctx) => {
      started.release();
      await Promise.race([release.promise, new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r()))]);
      if (ctx.signal.aborted) {
        ctx.emit(runEndFrame(ctx.req.runId, "aborted"));
        return { status: "aborted", appended: [], steersSeen: 0 };
      }
      return echo(ctx);
    });
    return { started, release };
  }

  readonly runner: Runner = async (req, emit, signal) => {
    this.calls.push(req);
    emit(runStartFrame(req.runId, req.trigger));
    for (const m of req.prompt) emit(messageFrame("user", m.text ?? ""));
    const script = this.scripts.shift() ?? ((ctx: RunCtx) => echo(ctx));
    try {
      return await script({ req, emit, signal });
    } finally {
      this.settledRuns++;
    }
  };
}

const sessions = unitSessions("vigil-unit-serve-session");
const sessionDir = () => sessions.dir();

async function openSession(fake: FakeRunner, dir = sessionDir()) {
  let t = 0;
  const s = sessions.track(await Session.open({ name: "s1", dir, runner: fake.runner, now: () => ++t }));
  const settled: RunSettled[] = [];
  s.onRunSettled((r) => settled.push(r));
  return { s, dir, settled };
}

const prompt = (id: string, message: string, streaming_behavior?: "follow_up" | "steer"): Command =>
  streaming_behavior === undefined ? { type: "prompt", id, message } : { type: "prompt", id, message, streaming_behavior };

function ok<T = Record<string, unknown>>(r: { success: boolean }): T {
  expect(r.success).toBe(true);
  return (r as unknown as { data: T }).data;
}

const frameTypes = (frames: TranscriptRecord[]) => frames.map((f) => (f.type === "message" ? `message:${f.role}:${f.text}` : f.type));

// ---- tests ----

describe("prompt and frames", () => {
  test("a prompt runs; every frame is stored with increasing seq and delivered to two subscribers", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const a: TranscriptRecord[] = [];
    const b: string[] = [];
    s.subscribe((f) => a.push(f));
    s.subscribe((_f, json) => b.push(json));
    expect(s.state).toBe("idle");
    const before = s.lastActivity;
    const r = await s.handle(prompt("p1", "hello"));
    const runId = ok<{ run_id: string }>(r).run_id;
    expect(typeof runId).toBe("string");
    expect((r as { seq?: number }).seq).toBe(1);
    await settledWhen(() => settled.length === 1, "the run to settle");
    expect(settled[0]).toEqual({ runId, status: "ok", succeeded: true, delivered: [], returned: [] });
    expect(s.state).toBe("idle");
    expect(s.lastActivity).toBeGreaterThan(before);
    expect(frameTypes(a)).toEqual(["response", "run_start", "message:user:hello", "message:assistant:echo: hello", "run_end"]);
    expect(a.map((f) => f.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(b.map((j) => JSON.parse(j).seq)).toEqual([1, 2, 3, 4, 5]);
    expect(a[1]).toMatchObject({ type: "run_start", run_id: runId, trigger: "prompt" });
    expect(a[0]).toMatchObject({ type: "response", id: "p1", command: "prompt", success: true });
    const stored = await s.replay(0);
    expect(stored.records).toEqual(a);
    expect(s.history).toEqual([
      { role: "user", text: "hello" },
      { role: "assistant", text: "echo: hello" },
    ]);
    // the second run gets the history
    await s.handle(prompt("p2", "again"));
    await settledWhen(() => settled.length === 2, "the second run");
    expect(fake.calls[1]!.history).toEqual([
      { role: "user", text: "hello" },
      { role: "assistant", text: "echo: hello" },
    ]);
  });

  test("a subscriber that throws is dropped; the others and the session keep going", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    let badCalls = 0;
    const good: number[] = [];
    s.subscribe(() => {
      badCalls++;
      throw new Error("broken client");
    });
    s.subscribe((f) => good.push(f.seq));
    const unsub = s.subscribe(() => {});
    unsub();
    await s.handle(prompt("p1", "hi"));
    await settledWhen(() => settled.length === 1, "the run");
    expect(badCalls).toBe(1);
    expect(good).toEqual([1, 2, 3, 4, 5]);
    expect(settled[0]!.succeeded).toBe(true);
  });
});

describe("queues", () => {
  test("follow-ups while busy are queued and run next, coalesced into one run", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const first = fake.blocking();
    ok(await s.handle(prompt("p1", "first")));
    await first.started.promise;
    expect(s.state).toBe("running");
    expect(ok(await s.handle(prompt("p2", "second")))).toEqual({ queued: "follow_up", position: 1 });
    expect(ok(await s.handle(prompt("p3", "third", "follow_up")))).toEqual({ queued: "follow_up", position: 2 });
    const st = ok<{ queued: unknown; state: string }>(await s.handle({ type: "get_state", id: "g" }));
    expect(st.state).toBe("running");
    expect(st.queued).toEqual({ follow_up: 2, steer: 0 });
    first.release.release();
    await settledWhen(() => settled.length === 2, "both runs");
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]!.trigger).toBe("follow_up");
    expect(fake.calls[1]!.prompt).toEqual([
      { role: "user", text: "second" },
      { role: "user", text: "third" },
    ]);
    expect(fake.calls[1]!.history).toEqual([
      { role: "user", text: "first" },
      { role: "assistant", text: "echo: first" },
    ]);
    expect(s.state).toBe("idle");
  });

  test("a steer while busy reaches takeSteers of the running run", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const turn = gate();
    const started = gate();
    fake.next(async (ctx) => {
      started.release();
      await turn.promise;
      const steers = ctx.req.takeSteers();
      expect(ctx.req.takeSteers()).toEqual([]);
      return echo(ctx, steers, steers.length);
    });
    await s.handle(prompt("p1", "work"));
    await started.promise;
    expect(ok(await s.handle(prompt("p2", "change course", "steer")))).toEqual({ queued: "steer" });
    turn.release();
    await settledWhen(() => settled.length === 1, "the run");
    expect(fake.calls).toHaveLength(1);
    expect(s.history).toEqual([
      { role: "user", text: "work" },
      { role: "user", text: "change course" },
      { role: "assistant", text: "echo: work | change course" },
    ]);
    const st = ok<{ queued: unknown }>(await s.handle({ type: "get_state", id: "g" }));
    expect(st.queued).toEqual({ follow_up: 0, steer: 0 });
  });

  test("abort: reports aborted; steers the model has not seen go back to the front of follow_up", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const started = gate();
    fake.next(async (ctx) => {
      started.release();
      await new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r()));
      ctx.emit(runEndFrame(ctx.req.runId, "aborted"));
      return { status: "aborted", appended: [], steersSeen: 0 };
    });
    await s.handle(prompt("p1", "long job"));
    await started.promise;
    ok(await s.handle(prompt("p2", "queued follow-up")));
    ok(await s.handle(prompt("p3", "steer me", "steer")));
    const second = fake.blocking();
    const a = ok<{ aborted: string | null }>(await s.handle({ type: "abort", id: "a1" }));
    expect(a.aborted).toBe(fake.calls[0]!.runId);
    await settledWhen(() => settled.length >= 1, "the aborted run");
    expect(settled[0]).toMatchObject({ runId: fake.calls[0]!.runId, status: "aborted", succeeded: false });
    // the next run starts with the steer first, then the follow-up
    await second.started.promise;
    expect(fake.calls[1]!.prompt).toEqual([
      { role: "user", text: "steer me" },
      { role: "user", text: "queued follow-up" },
    ]);
    const frames = (await s.replay(0)).records;
    const ends = frames.filter((f) => f.type === "run_end");
    expect(ends[0]).toMatchObject({ run_id: fake.calls[0]!.runId, status: "aborted" });
    second.release.release();
    await settledWhen(() => settled.length === 2, "the second run");
    expect(ok<{ aborted: null }>(await s.handle({ type: "abort", id: "a2" }))).toEqual({ aborted: null });
  });

  test("abort after takeSteers: taken but unseen steers are returned to the queue", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const started = gate();
    const steered = gate();
    const took = gate();
    let taken: ChatMessage[] = [];
    fake.next(async (ctx) => {
      started.release();
      await steered.promise;
      taken = ctx.req.takeSteers();
      took.release();
      await new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r()));
      return { status: "aborted", appended: [], steersSeen: 0 };
    });
    const next = fake.blocking();
    await s.handle(prompt("p1", "job"));
    await started.promise;
    await s.handle(prompt("p2", "late steer", "steer"));
    steered.release();
    await took.promise;
    expect(taken).toEqual([{ role: "user", text: "late steer" }]);
    expect(s.queued).toEqual({ follow_up: 0, steer: 0 });
    await s.handle({ type: "abort", id: "a" });
    await next.started.promise;
    expect(fake.calls[1]!.prompt).toEqual([{ role: "user", text: "late steer" }]);
    expect(settled[0]!.status).toBe("aborted");
    next.release.release();
    await settledWhen(() => settled.length === 2, "the second run");
  });
});

describe("state and transcript", () => {
  test("get_state and get_transcript (since, limit); history and seq survive a restart", async () => {
    const fake = new FakeRunner();
    const first = await openSession(fake);
    await first.s.handle(prompt("p1", "remember me"));
    await settledWhen(() => first.settled.length === 1, "the run");
    const lastSeq = first.s.lastSeq;
    expect(lastSeq).toBe(5);
    await first.s.close();
    await first.s.close(); // idempotent

    const fake2 = new FakeRunner();
    const { s, settled } = await openSession(fake2, first.dir);
    expect(s.history).toEqual([
      { role: "user", text: "remember me" },
      { role: "assistant", text: "echo: remember me" },
    ]);
    const st = await s.handle({ type: "get_state", id: "g1" });
    expect(ok(st)).toEqual({
      protocol_version: 1,
      name: "s1",
      state: "idle",
      queued: { follow_up: 0, steer: 0 },
      pending_injections: 0,
      last_seq: 5,
    });
    expect((st as { seq?: number }).seq).toBe(6);
    const page = ok<{ frames: TranscriptRecord[]; more: boolean }>(await s.handle({ type: "get_transcript", id: "t1", since: 2, limit: 2 }));
    expect(page.frames.map((f) => f.seq)).toEqual([3, 4]);
    expect(page.more).toBe(true);
    expect(page.frames[0]).toMatchObject({ type: "message", role: "user", text: "remember me" });
    const rest = ok<{ frames: TranscriptRecord[]; more: boolean }>(await s.handle({ type: "get_transcript", id: "t2", since: 4 }));
    expect(rest.frames.map((f) => f.seq)).toEqual([5, 6, 7]);
    expect(rest.more).toBe(false);
    const all = ok<{ frames: TranscriptRecord[] }>(await s.handle({ type: "get_transcript", id: "t3" }));
    expect(all.frames[0]!.seq).toBe(1);
    // a new run sees the restored history
    await s.handle(prompt("p2", "and now"));
    await settledWhen(() => settled.length === 1, "the run after restart");
    expect(fake2.calls[0]!.history).toEqual([
      { role: "user", text: "remember me" },
      { role: "assistant", text: "echo: remember me" },
    ]);
  });

  test("get_state while running shows the run id and pending injections", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const b = fake.blocking();
    const run = ok<{ run_id: string }>(await s.handle(prompt("p1", "x"))).run_id;
    await b.started.promise;
    s.inject({ tag: "b1", text: "events", behavior: "follow_up" });
    s.inject({ tag: "b2", text: "urgent", behavior: "steer" });
    await s.handle(prompt("p2", "y", "steer"));
    const st = ok<Record<string, unknown>>(await s.handle({ type: "get_state", id: "g" }));
    expect(st).toMatchObject({ state: "running", run_id: run, queued: { follow_up: 1, steer: 2 }, pending_injections: 2 });
    b.release.release();
    await settledWhen(() => settled.length === 2, "both runs");
  });

  test("a client that sees run_end finds the run over: get_state says idle and a prompt starts a run", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    // Three ways a run ends: the runner's run_end ok, its run_end aborted, and a runner that throws.
    const b = fake.blocking();
    fake.next(async () => {
      throw new Error("model down");
    });
    const answers: Promise<{ success: boolean }>[] = [];
    s.subscribe((f) => {
      if (f.type !== "run_end") return;
      answers.push(s.handle({ type: "get_state", id: `g${answers.length}` }));
    });
    const r1 = ok<{ run_id: string }>(await s.handle(prompt("p1", "x"))).run_id;
    await b.started.promise;
    expect(ok<{ aborted: string }>(await s.handle({ type: "abort", id: "a1" })).aborted).toBe(r1);
    await settledWhen(() => settled.length === 1, "the aborted run");
    ok(await s.handle(prompt("p2", "y")));
    await settledWhen(() => settled.length === 2, "the failed run");
    ok(await s.handle(prompt("p3", "z")));
    await settledWhen(() => settled.length === 3, "the echo run");
    const states = (await Promise.all(answers)).map((r) => ok<{ state: string; run_id?: string }>(r));
    expect(states.map((d) => [d.state, d.run_id])).toEqual([
      ["idle", undefined],
      ["idle", undefined],
      ["idle", undefined],
    ]);
    expect(settled.map((r) => r.status)).toEqual(["aborted", "failed", "ok"]);
  });

  test("a prompt sent on seeing run_end starts its own run instead of queueing behind the ended one", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const replies: Promise<{ success: boolean }>[] = [];
    s.subscribe((f) => {
      if (f.type === "run_end" && replies.length === 0) replies.push(s.handle(prompt("p2", "next")));
    });
    ok(await s.handle(prompt("p1", "first")));
    await settledWhen(() => settled.length === 2, "both runs");
    const second = ok<Record<string, unknown>>(await replies[0]!);
    expect(second.run_id).toEqual(expect.any(String));
    expect(second.queued).toBeUndefined();
  });

  test("mcp_events_* answer events_not_enabled until a handler is plugged in", async () => {
    const fake = new FakeRunner();
    const { s } = await openSession(fake);
    const seen: TranscriptRecord[] = [];
    s.subscribe((f) => seen.push(f));
    for (const cmd of [
      { type: "mcp_events_list", id: "l" },
      { type: "mcp_events_subscribe", id: "s", server: "tickets", name: "ticket.updated" },
      { type: "mcp_events_unsubscribe", id: "u", server: "tickets", name: "ticket.updated" },
    ] as Command[]) {
      const r = await s.handle(cmd);
      expect(r).toMatchObject({
        type: "response",
        id: cmd.id,
        command: cmd.type,
        success: false,
        error: { code: "events_not_enabled", message: EVENTS_NOT_ENABLED_MESSAGE },
      });
    }
    expect(seen.map((f) => f.type)).toEqual(["response", "response", "response"]);
    s.setEventsHandler((c) => okResponse("wrong", "get_state", { removed: c.type === "mcp_events_unsubscribe" }));
    const r = await s.handle({ type: "mcp_events_unsubscribe", id: "u2", server: "tickets", name: "ticket.updated" });
    expect(r).toMatchObject({ id: "u2", command: "mcp_events_unsubscribe", success: true, data: { removed: true } });
    s.setEventsHandler(async () => {
      throw new Error("events broke");
    });
    const e = await s.handle({ type: "mcp_events_list", id: "l2" });
    expect(e).toMatchObject({ success: false, error: { code: "internal", message: "events broke" } });
    s.setEventsHandler(null);
    expect(await s.handle({ type: "mcp_events_list", id: "l3" })).toMatchObject({ error: { code: "events_not_enabled" } });
  });
});

describe("injection", () => {
  test("follow_up and steer batches of an ok run are delivered by tag", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const started = gate();
    const turn = gate();
    fake.next(async (ctx) => {
      started.release();
      await turn.promise;
      const steers = ctx.req.takeSteers();
      return echo(ctx, steers, steers.length);
    });
    const r = s.inject({ tag: "b1", text: "batch one", behavior: "follow_up" });
    expect("started" in r).toBe(true);
    await started.promise;
    expect(fake.calls[0]!.trigger).toBe("mcp_events");
    expect(s.inject({ tag: "b2", text: "batch two", behavior: "steer" })).toEqual({ queued: "steer" });
    expect(s.inject({ tag: "b3", text: "batch three", behavior: "follow_up" })).toEqual({ queued: "follow_up" });
    turn.release();
    await settledWhen(() => settled.length === 2, "both runs");
    expect(settled[0]).toMatchObject({ status: "ok", succeeded: true, delivered: ["b1", "b2"], returned: [] });
    expect(settled[1]).toMatchObject({ status: "ok", succeeded: true, delivered: ["b3"], returned: [] });
    expect(fake.calls[1]!.trigger).toBe("mcp_events");
  });

  test("a steer injected while idle starts a run", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const r = s.inject({ tag: "s1", text: "now", behavior: "steer" });
    expect(r).toEqual({ started: fake.calls[0]!.runId });
    await settledWhen(() => settled.length === 1, "the run");
    expect(settled[0]!.delivered).toEqual(["s1"]);
  });

  test("a run with status failed returns its batches, including taken steers", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const started = gate();
    const turn = gate();
    fake.next(async (ctx) => {
      started.release();
      await turn.promise;
      ctx.req.takeSteers();
      ctx.emit(runEndFrame(ctx.req.runId, "failed", "model unreachable"));
      return { status: "failed", error: "model unreachable", appended: [], steersSeen: 1 };
    });
    s.inject({ tag: "f1", text: "a", behavior: "follow_up" });
    await started.promise;
    s.inject({ tag: "f2", text: "b", behavior: "steer" });
    turn.release();
    await settledWhen(() => settled.length === 1, "the run");
    expect(settled[0]).toMatchObject({ status: "failed", succeeded: false, delivered: [], returned: ["f1", "f2"] });
    expect(s.state).toBe("idle");
    // the returned batch is not kept in the history (it will be re-injected)
    expect(s.history).toEqual([]);
    const ends = (await s.replay(0)).records.filter((f) => f.type === "run_end");
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ status: "failed", error: "model unreachable" });
  });

  test("an ok run returns steers it took but the model never saw", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const started = gate();
    const turn = gate();
    fake.next(async (ctx) => {
      started.release();
      await turn.promise;
      ctx.req.takeSteers();
      return echo(ctx, [], 0);
    });
    s.inject({ tag: "x1", text: "a", behavior: "follow_up" });
    await started.promise;
    s.inject({ tag: "x2", text: "b", behavior: "steer" });
    turn.release();
    await settledWhen(() => settled.length === 1, "the run");
    expect(settled[0]).toMatchObject({ succeeded: true, delivered: ["x1"], returned: ["x2"] });
    expect(fake.calls).toHaveLength(1);
  });

  test("a runner that throws: run_end failed is stored, batches are returned, the session serves on", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    fake.next(async () => {
      throw new Error("runner exploded");
    });
    s.inject({ tag: "t1", text: "boom", behavior: "follow_up" });
    await settledWhen(() => settled.length === 1, "the failed run");
    expect(settled[0]).toMatchObject({ status: "failed", succeeded: false, delivered: [], returned: ["t1"] });
    const frames = (await s.replay(0)).records;
    expect(frames.at(-1)).toMatchObject({ type: "run_end", run_id: settled[0]!.runId, status: "failed", error: "runner exploded" });
    expect(s.state).toBe("idle");
    // a runner that throws before emitting anything still gets a run_start and a run_end
    const bare: Runner = () => {
      throw new Error("sync throw");
    };
    const s2 = sessions.track(await Session.open({ name: "s2", dir: sessions.dir("s2"), runner: bare }));
    const settled2: RunSettled[] = [];
    s2.onRunSettled((r) => settled2.push(r));
    await s2.handle(prompt("p", "x"));
    await settledWhen(() => settled2.length === 1, "the thrown run");
    expect((await s2.replay(0)).records.map((f) => f.type)).toEqual(["response", "run_start", "run_end"]);
    // and the first session still runs
    await s.handle(prompt("p2", "still here"));
    await settledWhen(() => settled.length === 2, "the next run");
    expect(settled[1]!.succeeded).toBe(true);
  });
});

describe("close", () => {
  test("close aborts the run, waits for it, and later commands get session_closed", async () => {
    const fake = new FakeRunner();
    const { s, settled } = await openSession(fake);
    const b = fake.blocking();
    s.inject({ tag: "c1", text: "pending", behavior: "follow_up" });
    await b.started.promise;
    await s.close();
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ status: "aborted", succeeded: false, returned: ["c1"] });
    expect(s.closed).toBe(true);
    const r = await s.handle({ type: "get_state", id: "late" });
    expect(r).toMatchObject({ type: "response", id: "late", command: "get_state", success: false, error: { code: "session_closed" } });
    expect(() => s.inject({ tag: "c2", text: "x", behavior: "follow_up" })).toThrow(SessionClosedError);
    await s.close();
    // the aborted run_end was stored before the transcript closed
    const again = await openSession(new FakeRunner(), sessionDir());
    const frames = (await again.s.replay(0)).records;
    expect(frames.at(-1)).toMatchObject({ type: "run_end", status: "aborted" });
  });

  test("close gives up on a runner that ignores the abort after the bound", async () => {
    const never = gate();
    const dir = sessionDir();
    const s = await Session.open({ name: "s1", dir, runner: () => never.promise.then(() => ({ status: "ok", appended: [], steersSeen: 0 })), closeTimeoutMs: 50 });
    await s.handle(prompt("p", "stuck"));
    expect(s.state).toBe("running");
    await s.close();
    expect(s.closed).toBe(true);
    never.release();
  });
});
