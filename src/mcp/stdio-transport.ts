/**
 * The MCP client transport serve uses for stdio servers: `new Client(…).connect(transport)`.
 *
 * Unlike the SDK's StdioClientTransport it owns the server's whole process group (servers are often
 * `npx` → node → more, and some double-fork), holds the per-message cap while reading, forwards the
 * server's stderr with its name, and never lets a close() wait unbounded: stdin EOF, a grace,
 * SIGTERM to the group, SIGKILL to the group (serve.md §6 items 8 and 9).
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { VigilError, errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { sinkWrite } from "../shared/sink.ts";
import {
  type ChildStatus,
  type GroupChild,
  spawnGroup,
  sweepGroup,
  tryStatus,
} from "../shared/process-group.ts";
import { within } from "../shared/time.ts";
import { type Frame, LineSplitter } from "../shared/ndjson/line-splitter.ts";
import { checkedGraceMs, checkedMaxMessageBytes, envMaxMessageBytes, envShutdownGraceMs, serverEnvironment } from "./stdio-config.ts";
import { type LineReader, readLines } from "./line-reader.ts";
import { ReadGate } from "./read-gate.ts";
import { OutstandingRequests, decodeServerFrame } from "./stdio-framing.ts";
import { trackTransport, untrackTransport } from "./stdio-registry.ts";
import { type StderrForwarder, escapeControls, forwardServerStderr } from "./stdio-stderr.ts";

/** serve's exit paths import these from here, next to the transport they close. */
export { closeAllStdioTransports, killAllStdioTransportGroups, openStdioTransportCount } from "./stdio-registry.ts";

export interface StdioMcpTransportOptions {
  /** The configured server name: prefixes its stderr lines and vigil's notes about it. */
  name: string;
  command: string;
  args?: string[];
  /** Added to the few variables a server inherits (see INHERITED_ENV_VARS). */
  env?: Record<string, string>;
  cwd?: string;
  /** Default: VIGIL_MCP_MAX_MESSAGE_BYTES, else 32 MiB. */
  maxMessageBytes?: number;
  /** Time a server gets to exit after stdin EOF. Default: VIGIL_SHUTDOWN_GRACE_MS, else 3000. */
  graceMs?: number;
}

export type TransportState = "new" | "open" | "closing" | "closed";

export interface StdioTransportStatus {
  name: string;
  pid: number | null;
  state: TransportState;
  /** Who ended the connection: close() (vigil), or the server (exited, or closed its stdout). */
  ended_by: "close" | "server" | null;
  /** How the group leader ended, once known. */
  exit: ChildStatus | null;
  /** vigil had to signal the group because the leader outlived the grace. */
  kill_requested: boolean;
  counts: {
    messages_received: number;
    messages_sent: number;
    skipped_lines: number;
    oversized_replaced: number;
    stderr_lines: number;
  };
}

/** How long close() waits for output already written to arrive once the group is gone. */
const DRAIN_MS = 500;
/** Each signal's wait in the sweep: two of them and the drain make the spec's "grace + 2 s". */
const SWEEP_POLL_MS = 750;

export class StdioMcpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  readonly name: string;
  readonly maxMessageBytes: number;
  readonly graceMs: number;
  /** Held by full push streams: stdout is not read on while it is (line-reader.ts). */
  readonly readGate = new ReadGate();
  private readonly argv: string[];
  private readonly options: StdioMcpTransportOptions;
  private child: GroupChild | null = null;
  private state: TransportState = "new";
  private closing: Promise<void> | null = null;
  private endedBy: StdioTransportStatus["ended_by"] = null;
  private killRequested = false;
  private stdout: LineReader | null = null;
  private stderr: StderrForwarder | null = null;
  private readonly outstanding = new OutstandingRequests();
  private readonly counts = { messages_received: 0, messages_sent: 0, skipped_lines: 0, oversized_replaced: 0 };

  /** Throws VigilError("config_invalid") for a malformed knob or option; spawns nothing. */
  constructor(options: StdioMcpTransportOptions) {
    this.options = options;
    this.name = options.name;
    this.argv = [options.command, ...(options.args ?? [])];
    this.maxMessageBytes = checkedMaxMessageBytes(options.maxMessageBytes ?? envMaxMessageBytes());
    this.graceMs = checkedGraceMs(options.graceMs ?? envShutdownGraceMs());
  }

  /** Leader pid, which is also the process group id; null before start(). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /**
   * Upper bound of close(): grace + 2 s (serve.md §6 item 9) — the grace, then either the SIGTERM
   * and SIGKILL polls or (leader gone) the straggler sweep, then the output drain.
   */
  get closeBoundMs(): number {
    return this.graceMs + 2 * SWEEP_POLL_MS + DRAIN_MS;
  }

  status(): StdioTransportStatus {
    return {
      name: this.name,
      pid: this.pid,
      state: this.state,
      ended_by: this.endedBy,
      exit: this.child ? tryStatus(this.child) : null,
      kill_requested: this.killRequested,
      counts: { ...this.counts, stderr_lines: this.stderr?.lines() ?? 0 },
    };
  }

  /** Spawns the server in its own process group. Rejects with a one-line VigilError("spawn_failed"). */
  async start(): Promise<void> {
    if (this.state !== "new") throw new Error(`MCP server ${this.label}: cannot start, the transport is ${this.state}`);
    let child: GroupChild;
    try {
      child = spawnGroup(this.argv, { stderr: "pipe", env: serverEnvironment(this.options.env), cwd: this.options.cwd });
    } catch (e) {
      this.state = "closed";
      throw new VigilError("spawn_failed", `MCP server ${this.label}: ${errorMessage(e)}`, { cause: e });
    }
    this.child = child;
    this.state = "open";
    trackTransport(this);
    this.stderr = forwardServerStderr(child.stderr as ReadableStream<Uint8Array>, this.name);
    this.stdout = readLines(child.stdout as ReadableStream<Uint8Array>, new LineSplitter(this.maxMessageBytes), {
      frame: (frame) => this.handleFrame(frame),
      failed: (e) => this.state === "open" && this.report(`reading its stdout failed: ${errorMessage(e)}`),
      // Without stdout no answer can arrive: a server that closes it has ended the connection.
      ended: () => this.endFromServer(),
    }, this.readGate);
    void child.exited.then(() => this.endFromServer());
  }

  /** Writes one line and waits until the pipe took it, so a server that stops reading slows us down. */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.state !== "open" || !this.child) {
      throw new Error(`MCP server ${this.label}: cannot send, the transport is ${this.state === "new" ? "not started" : "closed"}`);
    }
    this.outstanding.noteOutgoing(message);
    const sink = this.child.stdin;
    try {
      // One synchronous append per line: concurrent sends never interleave within a line.
      sinkWrite(sink, `${JSON.stringify(message)}\n`);
      await sink.flush();
    } catch (e) {
      throw new Error(`MCP server ${this.label}: writing to its stdin failed: ${errorMessage(e)}`);
    }
    this.counts.messages_sent++;
  }

  /** Ends the server and its group, bounded by closeBoundMs; idempotent; never rejects. */
  close(): Promise<void> {
    this.closing ??= this.shutdown("close");
    return this.closing;
  }

  private get label(): string {
    return JSON.stringify(escapeControls(this.name));
  }

  /** The leader exited, or stdout ended, while we were not closing: the server ended the connection. */
  private endFromServer(): void {
    if (this.state === "open") this.closing ??= this.shutdown("server");
  }

  private async shutdown(endedBy: "close" | "server"): Promise<void> {
    const child = this.child;
    if (this.state === "new" || this.state === "closed" || !child) {
      // Never started (or failed to): no process, no connection to report closed.
      this.state = "closed";
      return;
    }
    this.state = "closing";
    this.endedBy = endedBy;
    try {
      void Promise.resolve(child.stdin.end()).catch(() => {});
    } catch {
      // the pipe is already gone with the server
    }
    // The leader may already be gone (endedBy "server"): then this only sweeps what it left behind.
    const sweep = await sweepGroup(child, this.graceMs, { pollMs: SWEEP_POLL_MS });
    this.killRequested = sweep.kill_requested;
    // The group is gone, so nothing in it holds the pipes: let through what the server wrote last,
    // then stop reading (a process that left the group could otherwise hold them open forever).
    await within(Promise.all([this.stdout?.done, this.stderr?.done]), DRAIN_MS);
    this.stdout?.stop();
    this.stderr?.stop();
    if (endedBy === "server") logLine(`MCP server ${this.label} ended the connection (${describe(sweep.status)})`, { level: "warn", server: this.name, code: "server_exited" });
    this.state = "closed";
    this.outstanding.clear();
    untrackTransport(this);
    try {
      this.onclose?.();
    } catch (e) {
      logLine(`MCP server ${this.label}: onclose handler failed: ${errorMessage(e)}`, { level: "error", server: this.name, code: "internal" });
    }
  }

  private handleFrame(frame: Frame): void {
    const decoded = decodeServerFrame(frame, this.maxMessageBytes, this.outstanding);
    switch (decoded.kind) {
      case "blank":
        return;
      case "skipped":
        this.counts.skipped_lines++;
        this.report(decoded.note);
        return;
      case "replaced":
        this.counts.oversized_replaced++;
        this.report(decoded.note);
        this.deliver(decoded.message);
        return;
      case "message":
        this.counts.messages_received++;
        this.deliver(decoded.message);
    }
  }

  private deliver(message: JSONRPCMessage): void {
    this.outstanding.noteIncoming(message);
    try {
      this.onmessage?.(message);
    } catch (e) {
      this.onerror?.(new Error(`MCP server ${this.label}: message handler failed: ${errorMessage(e)}`));
    }
  }

  /** A non-fatal problem: noted on stderr for the operator and passed to onerror for the caller. */
  private report(note: string): void {
    const text = `MCP server ${this.label}: ${note}`;
    logLine(text, { level: "warn", server: this.name, code: "server_frame_refused" });
    this.onerror?.(new Error(text));
  }
}

function describe(status: ChildStatus): string {
  if (status.termination === "signaled") return `signal ${status.signal}`;
  if (status.termination === "exited") return `exit code ${status.exit_code}`;
  return "status unknown";
}
