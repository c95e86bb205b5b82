/**
 * `vigil wrap` orchestration: spawn the server in its own group, relay both directions, end the
 * session on the first of client EOF / server exit / a signal / an I/O error, sweep the group,
 * and write the stop record and manifest (wrap.md §2, §3, §8, §9).
 */
import { canonicalSha256 } from "../shared/digest.ts";
import { EXIT } from "../shared/errors.ts";
import { decisionLogFaultBytes } from "../shared/fault-seam.ts";
import { logLine } from "../shared/log.ts";
import { ENDING_SIGNALS, onSignals } from "../shared/signals.ts";
import {
  type SweepResult,
  signalGroup,
  spawnGroup,
  statusExitCode,
  sweepGroup,
  sweepStragglers,
  tryStatus,
} from "../shared/process-group.ts";
import { within } from "../shared/time.ts";
import { loadSigningKey } from "../evidence/keys.ts";
import type { SessionEnd } from "../evidence/records.ts";
import { LineWriter } from "../shared/ndjson/line-writer.ts";
import { relayClientFrames } from "./client-relay.ts";
import { writeCaptureFiles } from "./capture.ts";
import { LineSplitter, OVERSIZED_HEAD_BYTES } from "../shared/ndjson/line-splitter.ts";
import { BlockPool } from "../shared/ndjson/block-pool.ts";
import type { WrapOptions } from "./options.ts";
import { createCaptureDir, planOutputs } from "./output-plan.ts";
import { openPolicyGate } from "./policy-gate.ts";
import { ProxyState } from "./proxy-state.ts";
import { relayServerFrames } from "./server-relay.ts";
import { SessionEvidence } from "./session-evidence.ts";
import { teeServerStderr } from "./server-stderr.ts";

type Ending =
  | { kind: "client_eof" }
  | { kind: "server_exit" }
  | { kind: "signal"; signo: number }
  | { kind: "error"; reason: string };

const DRAIN_AFTER_EXIT_MS = 2000;
/** How long the errors owed to pending requests may wait for a client that does not read. */
const FAIL_PENDING_MS = 2000;
/** Server lines this long that span reads are relayed as pieces, not joined (see server-relay.ts). */
const LARGE_LINE_BYTES = 1024 * 1024;

/** Runs one wrap session to its end; resolves with vigil's exit status. Throws VigilError before spawning. */
export async function runWrap(o: WrapOptions): Promise<number> {
  const gate = await openPolicyGate(o);
  // Read and parsed before the server exists (a bad key: exit 2, nothing spawned); kept in memory
  // only, never in the child's argv or environment.
  const signer = o.signingKey === null ? null : loadSigningKey(o.signingKey);
  const plan = planOutputs(o);
  const child = spawnGroup(o.command, { stderr: plan.serverStderr ? "pipe" : "inherit" });
  const evidence = new SessionEvidence(plan, {
    eventSource: o.eventSource,
    serverId: o.serverId,
    serverPid: child.pid,
    commandSha256: canonicalSha256(o.command),
    policyDigest: gate.digest,
    dryRun: o.dryRun,
    decisionLogFsync: o.decisionLogFsync,
    decisionLogFaultBytes: decisionLogFaultBytes(),
    ...(signer === null ? {} : { signing: { signer, every: o.checkpointEvery, seconds: o.checkpointSeconds } }),
  });
  try {
    createCaptureDir(plan);
    evidence.openLogs();
  } catch (e) {
    child.stdin.end();
    await sweepGroup(child, 0);
    throw e;
  }
  const stderrDone = plan.serverStderr ? teeServerStderr(child.stderr as ReadableStream<Uint8Array>, plan.serverStderr) : Promise.resolve();

  let end!: (ending: Ending) => void;
  const ended = new Promise<Ending>((resolve) => {
    end = resolve;
  });
  const client = new LineWriter();
  client.onBroken = (reason) => end({ kind: "error", reason: `client stdout: ${reason}` });
  const state = new ProxyState(evidence, gate, client, child.stdin, o.maxMessageBytes, o.onEvidenceFailure);

  const offSignals = onSignals(ENDING_SIGNALS, (signo) => end({ kind: "signal", signo }));
  void child.exited.then(() => end({ kind: "server_exit" }));
  const serverOut = pumpServer(state, child.stdout as ReadableStream<Uint8Array>);
  const clientIn = pumpClient(state, end);

  const ending = await ended;
  clientIn.stop();
  const { session, sweep } = await finishEnding(ending, child, state, serverOut, o.shutdownGraceMs);
  await within(stderrDone, 1000);

  evidence.finish(session, sweep, state.counts, ending.kind === "error");
  await within(client.close(), 1000);
  offSignals();
  // The order of wrap.md §12: logs and checkpoints (closed by finish), stop record, manifest, envelope.
  if (plan.manifest) writeCaptureFiles(plan, o, evidence, gate, signer);

  if (evidence.failures.length > 0) {
    logLine(`evidence write failed (${evidence.failures.join("; ")}); server ${describeStatus(sweep)}`);
    return EXIT.evidence;
  }
  if (ending.kind === "signal") return 128 + ending.signo;
  return statusExitCode(sweep.status);
}

async function finishEnding(
  ending: Ending,
  child: ReturnType<typeof spawnGroup>,
  state: ProxyState,
  serverOut: Promise<void>,
  graceMs: number,
): Promise<{ session: SessionEnd; sweep: SweepResult }> {
  closeStdin(child);
  if (ending.kind === "server_exit") {
    // The leader is gone: sweep what it left in its group (that also closes the stdout pipe they
    // may hold), relay what it wrote before exiting, then fail what is still pending.
    const status = tryStatus(child)!;
    await sweepStragglers(child.pid);
    await within(serverOut, DRAIN_AFTER_EXIT_MS);
    await failPendingWithin(state, `MCP server exited (${describeCode(status.exit_code, status.signal)})`);
    return { session: "server_exited", sweep: { status, kill_requested: false } };
  }
  let sweep: SweepResult;
  if (ending.kind === "signal") {
    const running = tryStatus(child) === null;
    if (running) signalGroup(child.pid, "SIGTERM");
    sweep = await sweepGroup(child, 0, { termSent: running });
  } else {
    // Client EOF or an I/O error: the server gets its stdin closed and the grace to finish, while
    // its output keeps flowing to the client.
    const deadline = performance.now() + graceMs;
    await within(serverOut, graceMs);
    sweep = await sweepGroup(child, Math.max(0, deadline - performance.now()));
  }
  await within(serverOut, DRAIN_AFTER_EXIT_MS);
  await failPendingWithin(state, `MCP server exited (${describeCode(sweep.status.exit_code, sweep.status.signal)})`);
  const session: SessionEnd =
    ending.kind === "signal" ? "proxy_signaled" : ending.kind === "error" ? "proxy_error" : "client_closed";
  if (ending.kind === "error") logLine(`proxy I/O error: ${ending.reason}`);
  return { session, sweep };
}

/**
 * Every request still pending gets its error — unless the client has stopped reading (a hung
 * agent): then the write waits on its full pipe, and a shutdown must not wait on it for ever.
 */
async function failPendingWithin(state: ProxyState, message: string): Promise<void> {
  const pending = state.pending.size;
  if ((await within(state.failPending(message).then(() => true), FAIL_PENDING_MS)) === undefined) {
    logLine(`the client did not take the errors for ${pending} pending request${pending === 1 ? "" : "s"} within ${FAIL_PENDING_MS} ms (it is not reading); ending without them`);
  }
}

async function pumpServer(state: ProxyState, stdout: ReadableStream<Uint8Array>): Promise<void> {
  // Held lines go into reused blocks: memory stays flat across large results (block-pool.ts).
  // Each frame is relayed before the next push, which is when the splitter reuses its blocks.
  const splitter = new LineSplitter(state.maxMessageBytes, LARGE_LINE_BYTES, OVERSIZED_HEAD_BYTES, new BlockPool());
  const reader = stdout.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const frames = splitter.push(value);
      if (frames.length > 0) await relayServerFrames(state, frames);
    }
    const rest = splitter.end();
    if (rest.length > 0) await relayServerFrames(state, rest);
  } catch (e) {
    logLine(`reading the server's stdout failed: ${String(e)}`);
  }
}

function pumpClient(state: ProxyState, end: (ending: Ending) => void): { stop(): void } {
  const splitter = new LineSplitter(state.maxMessageBytes);
  const reader = Bun.stdin.stream().getReader();
  let stopped = false;
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || stopped) break;
        const frames = splitter.push(value);
        if (frames.length > 0) await relayClientFrames(state, frames);
      }
      if (!stopped) {
        const rest = splitter.end();
        if (rest.length > 0) await relayClientFrames(state, rest);
      }
      end({ kind: "client_eof" });
    } catch (e) {
      end({ kind: "error", reason: `client stdin: ${String(e)}` });
    }
  })();
  return {
    stop() {
      stopped = true;
      reader.cancel().catch(() => {});
    },
  };
}

function closeStdin(child: ReturnType<typeof spawnGroup>): void {
  try {
    void Promise.resolve(child.stdin.end()).catch(() => {});
  } catch {
    // already closed, or the server is gone
  }
}

function describeCode(code: number | null, signal: number | null): string {
  if (signal !== null) return `signal ${signal}`;
  return code === null ? "status unknown" : `code ${code}`;
}

function describeStatus(sweep: SweepResult): string {
  const s = sweep.status;
  return `termination=${s.termination} exit_code=${s.exit_code} signal=${s.signal} kill_requested=${sweep.kill_requested}`;
}
