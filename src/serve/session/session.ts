/**
 * One `vigil serve` session (serve.md §4, §5, §6 item 5): a transcript, the conversation history,
 * the follow-up and steer lines, and at most one run in flight, executed by an injected `Runner`.
 *
 * - Every frame (command responses included) is stored in the transcript, which numbers it, and then
 *   broadcast to subscribers (a get_transcript page as a stub: transcript-answer.ts). Every command
 *   gets exactly one `response`.
 * - Runs: one at a time. When a run ends and follow-ups are queued, the next run starts with all of
 *   them (one user message each). After each run the transcript is synced; the run succeeded only
 *   when its status is ok and that sync resolved.
 * - Injected event batches (`inject`) are tagged; `onRunSettled` reports which tags the model received
 *   in a run that succeeded (`delivered`) and which must be re-injected (`returned`).
 * - A runner that throws yields a stored `run_end` failed; the session goes back to idle and serves on.
 * - A run's `run_end` is stored once the session is idle again (or runs the next queued run), so a
 *   client that sees it and asks get_state or prompts finds the run over.
 */
import { contextBudget } from "../context/budget.ts";
import type { ChatMessage } from "../models/types.ts";
import type { Command, CommandName } from "../protocol/commands.ts";
import { PROTOCOL_VERSION, type FrameBody, type ResponseFrame, errorResponse, runEndFrame, runStartFrame } from "../protocol/frames.ts";
import { Transcript, type ReadSinceOptions, type ReadSinceResult } from "../state/transcript.ts";
import { errorMessage } from "../../shared/errors.ts";
import { within } from "../../shared/time.ts";
import { type Accepted, type CommandTarget, answerCommand } from "./commands.ts";
import { FrameLog } from "./frame-log.ts";
import { type ActiveRun, newActiveRun, runFrameSink, runRequest } from "./active-run.ts";
import { type HistoryFold, rebuildHistory } from "./history.ts";
import { type PendingItem, Queues } from "./queues.ts";
import { DeliveryReports, injectedItem } from "./delivery-reports.ts";
import { DEFAULT_CLOSE_TIMEOUT_MS, FrameNotStoredError, SessionClosedError, eventsNotEnabled, normalizeOutcome } from "./session-support.ts";
import { settleRun } from "./settle.ts";
import { type StoreAnswer, planStore } from "./transcript-answer.ts";
import type {
  EventsHandler, EventsSession, FrameListener, InjectResult, Injection,
  ReceivedListener, RunOutcome, RunSettled, RunSettledListener, Runner, SessionOptions, SessionState, SessionStateData,
} from "./types.ts";

type StoredResponse = ResponseFrame & { seq?: number; time?: string };

export class Session implements EventsSession {
  readonly name: string;
  private readonly runner: Runner;
  private readonly now: () => number;
  private readonly newRunId: () => string;
  private readonly closeTimeoutMs: number;
  private readonly onFault: (error: unknown) => void;
  private readonly serverStates: SessionOptions["serverStates"];
  private readonly contextTokens: number | undefined;
  private readonly frames: FrameLog;
  private readonly queues = new Queues();
  private readonly reports = new DeliveryReports((e) => this.onFault(e));
  private eventsHandler: EventsHandler = eventsNotEnabled;
  private run: ActiveRun | null = null;
  private closing: Promise<void> | null = null;
  private activity: number;
  private readonly commands: CommandTarget = {
    accept: (item, behavior, trigger) => this.accept(item, behavior, trigger),
    abortRun: () => {
      const run = this.run;
      if (run !== null && !run.controller.signal.aborted) run.controller.abort(new Error("aborted by the client"));
      return run?.id ?? null;
    },
    stateData: () => this.stateData(),
    replay: (since, bounds) => this.replay(since, bounds),
    events: (command) => this.eventsHandler(command),
  };

  private constructor(o: SessionOptions, private readonly transcript: Transcript, private readonly conversation: HistoryFold) {
    this.name = o.name;
    this.runner = o.runner;
    this.now = o.now ?? Date.now;
    this.newRunId = o.newRunId ?? (() => `run_${crypto.randomUUID()}`);
    this.closeTimeoutMs = o.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS;
    this.onFault = o.onFault ?? (() => {});
    this.serverStates = o.serverStates;
    this.contextTokens = o.contextTokens;
    // Every stored frame goes through the history's fold (history.ts) before any client sees it.
    this.frames = new FrameLog(transcript, (record) => conversation.add(record));
    this.frames.subscribe((f) => this.reports.see(f));
    this.activity = this.now();
  }

  /** Opens the transcript in `dir` and rebuilds the history from its last compaction on (history.ts). */
  static async open(options: SessionOptions): Promise<Session> {
    const transcript = await Transcript.open(options.dir, options.transcript);
    try {
      const history = await rebuildHistory(transcript, options.name);
      return new Session(options, transcript, history);
    } catch (e) {
      await transcript.close().catch(() => {});
      throw e;
    }
  }

  get state(): SessionState {
    return this.run === null ? "idle" : "running";
  }

  /** The id of the run in flight, or null. */
  get runId(): string | null {
    return this.run?.id ?? null;
  }

  /** When the last command, injection or run frame happened (ms since the epoch, from `now`). */
  get lastActivity(): number {
    return this.activity;
  }

  /** The largest event batch its model takes (context/budget.ts), for the events coalescer. */
  get injectionMaxBytes(): number {
    return contextBudget(this.contextTokens).batchBytes;
  }

  get closed(): boolean {
    return this.closing !== null;
  }

  /** How many messages wait in each line. */
  get queued(): { follow_up: number; steer: number } {
    return { follow_up: this.queues.followUp.length, steer: this.queues.steer.length };
  }

  get lastSeq(): number {
    return this.transcript.lastSeq;
  }

  /** The oldest seq still stored (transcript retention deleted those before it). */
  get oldestSeq(): number { return this.transcript.oldestSeq; }

  /** The conversation so far (user/assistant text of earlier runs), exactly what a reopen rebuilds. */
  get history(): readonly ChatMessage[] {
    return this.conversation.messages();
  }

  subscribe(listener: FrameListener): () => void {
    return this.frames.subscribe(listener);
  }

  readonly onRunSettled = (listener: RunSettledListener): (() => void) => this.reports.onRunSettled(listener);
  readonly onReceived = (listener: ReceivedListener): (() => void) => this.reports.onReceived(listener);

  /** Routes `mcp_events_*` commands (null restores the default `events_not_enabled` answer). */
  setEventsHandler(handler: EventsHandler | null): void {
    this.eventsHandler = handler ?? eventsNotEnabled;
  }

  /** Stored frames after `since` (catch-up for a reattaching client). */
  replay(since = 0, bounds: ReadSinceOptions = {}): Promise<ReadSinceResult> {
    return this.transcript.readSince(since, bounds);
  }

  /** Stores and broadcasts a frame that is not part of a run (`mcp_event`, `mcp_event_status`). */
  emit(frame: FrameBody): number | null {
    if (this.closed) return null;
    // Not client activity: a subscription retrying must not keep a session from the reaper.
    const activity = this.activity;
    const seq = this.store(frame)?.seq ?? null;
    this.activity = activity;
    return seq;
  }

  /** `emit` for frames that arrived together (one poll page): one transcript write for all, each stored before it is sent. */
  emitMany(frames: readonly FrameBody[]): (number | null)[] {
    if (this.closed) return frames.map(() => null);
    const activity = this.activity;
    const seqs = this.frames.emitMany(frames).map((record) => this.stored(record)?.seq ?? null);
    this.activity = activity;
    return seqs;
  }

  /** Answers one command with exactly one `response`, which is also stored and broadcast. */
  async handle(command: Command): Promise<ResponseFrame> {
    const id = command.id;
    const type = command.type as CommandName;
    if (this.closed) return errorResponse(id, type, "session_closed", "the session is closed");
    // A session whose transcript has failed cannot record anything: it refuses work rather than
    // run a model (and tools) off the record.
    const failed = this.transcript.failed;
    if (failed && command.type !== "get_state" && command.type !== "get_transcript") {
      return errorResponse(id, type, "session_failed", `the session's transcript failed: ${failed.message}`);
    }
    this.touch();
    const { response, after } = await answerCommand(this.commands, command);
    const answer = this.respond(response);
    after?.();
    return answer;
  }

  /**
   * Stores and broadcasts a command's answer or stdio mode's refusal of a line (one path, both
   * modes); one over the record cap is replaced by a stored `response_too_large`. Unstored (no seq)
   * only when nothing can be stored any more: the session is closed or its transcript failed.
   */
  respond(response: ResponseFrame): StoredResponse {
    // A get_transcript page is stored as a stub; the asker gets it whole (transcript-answer.ts).
    const plan = planStore(response);
    const answer = "answer" in plan ? plan.answer : undefined;
    const record = this.closed || "refused" in plan ? null : this.store(plan.frame, answer);
    const stored = (record !== null && answer !== undefined ? answer(record).record : record) as StoredResponse | null;
    if (stored !== null || this.closed || this.transcript.failed !== null) return stored ?? response;
    const why = "refused" in plan ? plan.refused : `the response could not be stored: ${errorMessage(this.frames.lastError)}; ask for fewer frames`;
    const tooLarge = errorResponse(response.id, response.command, "response_too_large", why);
    return (this.store(tooLarge) as StoredResponse | null) ?? tooLarge;
  }

  /**
   * Injects an event batch (never refused while open): follow_up is queued like a prompt (it starts
   * a run when idle); steer is handed to the running run at its next turn, or starts a run when idle.
   */
  inject(injection: Injection): InjectResult {
    if (this.closed || this.transcript.failed) throw new SessionClosedError();
    this.touch();
    const r = this.accept(injectedItem(injection), injection.behavior, "mcp_events");
    if ("start" in r) {
      r.start.go();
      return { started: r.start.id };
    }
    return { queued: r.queued };
  }

  /** Aborts the run in flight, waits for it (bounded), syncs and closes the transcript. Idempotent. */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.closing = (async () => {
      this.reports.close();
      const run = this.run;
      if (run !== null) {
        if (!run.controller.signal.aborted) run.controller.abort(new Error("the session is closing"));
        await within(run.done, this.closeTimeoutMs);
      }
      await this.transcript.close();
    })();
    return this.closing;
  }

  // ---- internals ----

  private touch(): void {
    this.activity = this.now();
  }

  private store(frame: FrameBody, answer?: StoreAnswer) {
    return this.stored(this.frames.emit(frame, answer));
  }

  private stored<R>(record: R | null): R | null {
    if (record !== null) this.touch();
    // Nothing more of this session can be recorded: stop the run rather than let it call tools.
    else if (this.transcript.failed && this.run !== null && !this.run.controller.signal.aborted) {
      this.run.controller.abort(new Error("the session's transcript failed"));
    }
    return record;
  }

  private stateData(): SessionStateData {
    const data: SessionStateData = {
      protocol_version: PROTOCOL_VERSION,
      name: this.name,
      state: this.state,
      queued: this.queued,
      pending_injections: this.queues.pendingInjections,
      last_seq: this.transcript.lastSeq,
      ...this.reports.stateField(),
      ...(this.serverStates === undefined ? {} : { servers: this.serverStates() }),
    };
    if (this.run !== null) data.run_id = this.run.id;
    if (this.transcript.failed) data.failed = this.transcript.failed.message;
    return data;
  }

  /**
   * Takes a message into the session. Idle: returns a run to start (the caller starts it after it
   * answered, so the response precedes run_start). Busy: queues it.
   */
  private accept(item: PendingItem, behavior: "follow_up" | "steer", idleTrigger: string): Accepted {
    if (this.run === null) {
      const id = this.newRunId();
      const trigger = idleTrigger === "prompt" && behavior === "steer" ? "steer" : idleTrigger;
      // Reserve the slot now, so a command answered before `go` runs queues behind this run.
      const run = this.reserve(id, [item]);
      return { start: { id, go: () => this.execute(run, trigger) } };
    }
    if (behavior === "steer") {
      this.queues.pushSteer(item);
      return { queued: "steer" };
    }
    return { queued: "follow_up", position: this.queues.pushFollowUp(item) };
  }

  private reserve(id: string, prompt: PendingItem[]): ActiveRun {
    const run = newActiveRun(id, prompt);
    this.run = run;
    return run;
  }

  private execute(run: ActiveRun, trigger: string): void {
    run.done = this.drive(run, trigger).catch((e) => this.onFault(e));
  }

  private async drive(run: ActiveRun, trigger: string): Promise<void> {
    const request = runRequest(run, trigger, {
      history: this.conversation,
      historySeq: this.transcript.lastSeq,
      steers: () => (this.run === run ? this.queues.takeSteers() : []),
      steersReceived: this.reports.receiptsFor(run.prompt, run.taken, run.id),
    });
    const emit = runFrameSink(run, (frame) => this.store(frame), () => this.frames.lastError);
    let outcome: RunOutcome;
    try {
      outcome = normalizeOutcome(await this.runner(request, emit, run.controller.signal));
    } catch (e) {
      outcome = { status: run.controller.signal.aborted ? "aborted" : "failed", error: errorMessage(e), steersSeen: 0 };
      if (e instanceof FrameNotStoredError) outcome.code = e.code;
    }
    await this.finish(run, trigger, outcome);
  }

  /** Settles a run; its run_end is stored after `this.run` is cleared (see the header). */
  private async finish(run: ActiveRun, trigger: string, outcome: RunOutcome): Promise<void> {
    run.accepting = false;
    if (!run.sawStart) this.store(runStartFrame(run.id, trigger));
    let synced = false;
    try {
      await this.transcript.sync();
      synced = true;
    } catch {
      // the transcript is latched failed: the run did not succeed
    }
    const succeeded = outcome.status === "ok" && synced;
    const leftover = this.queues.takeSteers();
    const s = settleRun({ prompt: run.prompt, taken: run.taken, steersSeen: outcome.steersSeen, leftover, succeeded });
    this.queues.requeueFront(s.requeue);
    this.run = null;
    // The stored run_end says what the session decided: storing it adds the run's block to the
    // history (ok) or not, as a reopen would find it.
    const own = run.end !== null && (run.end as { status?: unknown }).status === outcome.status ? run.end : null;
    this.store(own ?? runEndFrame(run.id, outcome.status, outcome.error, outcome.code));
    const report: RunSettled = { runId: run.id, status: outcome.status, succeeded, delivered: s.delivered, returned: s.returned };
    this.reports.settled(report, outcome);
    this.startNext();
    // The run_end itself: whoever awaits the run (close) finds it on disk. A failure is latched.
    await this.transcript.sync().catch(() => {});
  }

  /** Starts a run with every queued follow-up, if any (and the session is open and idle). */
  private startNext(): void {
    if (this.closed || this.run !== null) return;
    const items = this.queues.takeFollowUps();
    if (items.length === 0) return;
    const trigger = items.every((i) => i.tag !== undefined) ? "mcp_events" : "follow_up";
    const run = this.reserve(this.newRunId(), items);
    this.execute(run, trigger);
  }
}
export { EVENTS_NOT_ENABLED_MESSAGE, SessionClosedError, eventsNotEnabled } from "./session-support.ts";
