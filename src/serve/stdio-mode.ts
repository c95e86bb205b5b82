/**
 * stdio mode of `vigil serve` (serve.md §1, §4): one session; commands arrive as NDJSON on stdin,
 * every frame leaves as one NDJSON line on stdout through ONE writer (the session's frames and the
 * refusals of malformed lines alike), so lines never interleave.
 *
 * - A malformed line is answered with a `response` success:false (stored in the transcript like any
 *   other frame) and reading goes on; nothing a client sends ends the process. Every frame on
 *   stdout is in the transcript, but for the answers given once the transcript failed for good
 *   (and a get_transcript answer, stored as a stub of itself: session/transcript-answer.ts).
 * - Back-pressure: while more than OUT_HIGH_WATER bytes of frames wait for stdout, stdin is not
 *   read, so a client that stops reading its frames stops its own commands instead of growing our
 *   memory. (Frames of a run already in flight are still queued: a run's output is bounded.)
 * - EOF (decision): the run in flight, and follow-ups already queued, are allowed to finish,
 *   bounded by the model's `timeout_ms` from EOF; their frames are written. Then the session, the
 *   pool and every stdio server group are closed and serve exits 0.
 * - SIGTERM / SIGINT / SIGHUP: the run in flight is aborted (its run_end is written), everything is
 *   closed the same way, and serve exits 128+signo.
 * - stdout gone (EPIPE): as a signal, but exit 1.
 * - The session failed (an unexpected exception, contained by session-faults.ts: its `error` frame
 *   is written, the session closed): nothing is left to serve, so reading stops, the pool and every
 *   stdio server group are closed the same way (bounded) and serve exits 4 (EXIT.sessionFailed);
 *   its pending events stay on disk for the next start. Answering `session_closed` to every later
 *   command would leave a client talking to a dead session.
 */
import type { FileSink } from "bun";
import { EXIT, errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { ENDING_SIGNALS, onSignals } from "../shared/signals.ts";
import { within } from "../shared/time.ts";
import { FLUSH_EVERY_BYTES, LineWriter } from "../shared/ndjson/line-writer.ts";
import type { ServeApp } from "./types.ts";
import { NdjsonCommandReader, encodeFrame } from "./protocol/ndjson.ts";
import type { ParseCommandResult } from "./protocol/parse-command.ts";
import type { Session } from "./session/session.ts";

const OUT_HIGH_WATER = 4 * 1024 * 1024;
const FLUSH_ON_EXIT_MS = 2000;
const IDLE_POLL_MS = 25;

type Ending = { kind: "eof" } | { kind: "signal"; signo: number } | { kind: "broken"; reason: string } | { kind: "failed" };

export interface StdioModeOptions {
  session: string;
  stdin?: ReadableStream<Uint8Array>;
  stdout?: FileSink;
}

/** Runs stdio mode to its end and shuts the app down; resolves with the exit status. */
export async function runStdioMode(app: ServeApp, options: StdioModeOptions): Promise<number> {
  let end!: (e: Ending) => void;
  const ended = new Promise<Ending>((resolve) => (end = resolve));
  // A signal after EOF (while the run in flight finishes) must still end us promptly.
  let signalled!: (signo: number) => void;
  const signal = new Promise<number>((resolve) => (signalled = resolve));
  const offSignals = onSignals(ENDING_SIGNALS, (signo) => {
    end({ kind: "signal", signo });
    signalled(signo);
  });
  // Told once the failed session is closed, so its `error` frame is already queued for stdout.
  const offEnded = app.onSessionEnded((name) => {
    if (name === options.session) end({ kind: "failed" });
  });
  try {
    const out = new FrameWriter(new LineWriter(options.stdout ?? Bun.stdout.writer()), (reason) => end({ kind: "broken", reason }));
    let session: Session;
    try {
      // Subscribed as it opens: frames of its event subscriptions may come before this resolves.
      // The one client asked every command: it gets a get_transcript answer whole, not its stored stub.
      session = await app.openSession(options.session, { subscribe: (_record, json, answerJson) => out.push(`${answerJson ?? json}\n`) });
    } catch (e) {
      await app.shutdown();
      await within(out.close(), FLUSH_ON_EXIT_MS);
      throw e;
    }
    const input = pumpCommands(options.stdin ?? Bun.stdin.stream(), session, out, end);

    let ending = await ended;
    input.stop();
    if (ending.kind === "eof") {
      const late = await Promise.race([waitIdle(session, app.runBoundMs).then(() => null), signal]);
      if (late !== null) ending = { kind: "signal", signo: late };
    }
    await app.shutdown();
    await within(out.close(), FLUSH_ON_EXIT_MS);
    if (ending.kind === "signal") return 128 + ending.signo;
    if (ending.kind === "broken") {
      logLine(`serve: stdout closed (${ending.reason}); stopped`, { level: "warn", session: options.session, code: "stdout_closed" });
      return 1;
    }
    if (ending.kind === "failed") {
      logLine(`serve: session ${JSON.stringify(options.session)} failed on an internal error; stopped (its pending events stay on disk)`, { level: "error", session: options.session, code: "session_failed" });
      return EXIT.sessionFailed;
    }
    return EXIT.ok;
  } finally {
    offSignals();
    offEnded();
  }
}

/**
 * The one writer of stdout: lines are queued synchronously (in seq order) and drained in order. The
 * drain starts once the current task has queued its lines, so the frames of one poll page go out
 * encoded together, in one write and one flush, rather than the first alone and then the rest.
 */
export class FrameWriter {
  private queue: string[] = [];
  /** UTF-8 bytes queued or being written (exact: the high-water mark bounds memory). */
  private pendingBytes = 0;
  private draining: Promise<void> | null = null;
  private drainedWaiters: (() => void)[] = [];

  constructor(
    private readonly writer: LineWriter,
    onBroken: (reason: string) => void,
  ) {
    writer.onBroken = onBroken;
  }

  push(line: string): void {
    if (this.writer.broken !== null) return;
    this.queue.push(line);
    this.pendingBytes += Buffer.byteLength(line);
    this.draining ??= Promise.resolve().then(() => this.drain());
  }

  /** Resolves once the backlog is under the high-water mark (at once when it is). */
  belowHighWater(): Promise<void> {
    if (this.pendingBytes <= OUT_HIGH_WATER || this.writer.broken !== null) return Promise.resolve();
    return new Promise((wake) => this.drainedWaiters.push(wake));
  }

  async close(): Promise<void> {
    while (this.draining !== null) await this.draining;
    await this.writer.close();
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = encodeLines(this.queue);
      this.queue = [];
      const ok = await this.writer.write(batch);
      for (const b of batch) this.pendingBytes -= b.byteLength;
      if (!ok) {
        this.queue = [];
        this.pendingBytes = 0;
      }
      if (this.pendingBytes <= OUT_HIGH_WATER) for (const wake of this.drainedWaiters.splice(0)) wake();
    }
    this.draining = null;
  }
}

/** Queued lines as few buffers: consecutive lines joined up to FLUSH_EVERY_BYTES (a longer line alone), so the copy stays bounded. */
function encodeLines(lines: string[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let text = "";
  for (const line of lines) {
    if (text.length > 0 && text.length + line.length > FLUSH_EVERY_BYTES) {
      out.push(Buffer.from(text));
      text = "";
    }
    text += line;
  }
  if (text.length > 0) out.push(Buffer.from(text));
  return out;
}

function pumpCommands(
  stdin: ReadableStream<Uint8Array>,
  session: Session,
  out: FrameWriter,
  end: (e: Ending) => void,
): { stop(): void } {
  const reader = stdin.getReader();
  const commands = new NdjsonCommandReader();
  let stopped = false;
  const handle = async (results: ParseCommandResult[]) => {
    for (const r of results) {
      if (stopped) return;
      // Stored and broadcast (so written through the subscription) by the one path daemon mode
      // takes too (Session.respond): an over-cap response became a stored response_too_large.
      const response = r.ok ? await session.handle(r.command) : session.respond(r.response);
      // Only when nothing can be stored any more (the transcript failed; serve.md §6 item 9) does a
      // response come back without a seq: the client still gets its one answer to the command.
      if (!("seq" in response)) out.push(encodeFrame(response));
    }
  };
  void (async () => {
    try {
      for (;;) {
        await out.belowHighWater();
        const { value, done } = await reader.read();
        if (done || stopped) break;
        await handle(commands.push(value));
      }
      if (!stopped) await handle(commands.end());
      end({ kind: "eof" });
    } catch (e) {
      logLine(`serve: reading stdin failed: ${errorMessage(e)}`, { level: "warn", code: "stdin_failed" });
      end({ kind: "eof" });
    }
  })();
  return {
    stop() {
      stopped = true;
      reader.cancel().catch(() => {});
    },
  };
}

/** Waits until no run is in flight (queued follow-ups included), at most `ms`. */
async function waitIdle(session: Session, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (session.state === "running" && performance.now() < deadline) {
    await new Promise((wake) => setTimeout(wake, IDLE_POLL_MS));
  }
  if (session.state === "running") logLine("serve: the run in flight did not finish within the model timeout; aborting it", { level: "warn", session: session.name, code: "run_aborted_at_stop" });
}
