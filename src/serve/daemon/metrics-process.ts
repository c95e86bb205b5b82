/**
 * The daemon's collected metrics (issue 15 item 1): values that live elsewhere, read at scrape
 * time rather than mirrored on every change — MCP server states, sessions open, SSE clients, open
 * file descriptors, resident memory, event-loop lag, build info and the process start time.
 * Registered when daemon mode starts (run.ts), removed at its shutdown; with `VIGIL_METRICS=off`
 * the registry takes none.
 */
import { readdirSync } from "node:fs";
import { COMMIT, VERSION } from "../../shared/build-info.ts";
import { MCP_COLLECTED, METRICS, PROCESS_COLLECTED } from "../../shared/metrics/catalog.ts";
import type { CollectedFamily, CollectedSample } from "../../shared/metrics/registry.ts";
import { type Scheduler, type TimerHandle, realScheduler } from "../../shared/time.ts";
import type { ServerState } from "./health.ts";

/** Every state a server reports (mcp/supervision.ts ReportedServerState): each gets its 0 or 1. */
export const SERVER_STATES = ["connecting", "connected", "reconnecting", "closed"] as const;

export const LAG_INTERVAL_MS = 500;
/** The lag gauge is the worst of the last this many samples (5 s), so a stall between scrapes shows. */
export const LAG_WINDOW = 10;

/**
 * Event-loop lag: a timer armed every `intervalMs` notes how late it fired — time the loop was busy
 * with something else. Unref'd: it never keeps the process alive.
 */
export class LagSampler {
  private readonly samples: number[] = [];
  private timer: TimerHandle | null = null;
  private due = 0;

  constructor(
    private readonly scheduler: Scheduler = { ...realScheduler, now: () => performance.now() },
    private readonly intervalMs = LAG_INTERVAL_MS,
    private readonly window = LAG_WINDOW,
  ) {}

  start(): void {
    if (this.timer !== null) return;
    this.arm();
  }

  stop(): void {
    if (this.timer !== null) this.scheduler.clearTimeout(this.timer);
    this.timer = null;
  }

  /** Seconds: the largest lateness of the last `window` samples (0 before the first). */
  get lagSeconds(): number {
    return this.samples.length === 0 ? 0 : Math.max(...this.samples) / 1000;
  }

  private arm(): void {
    this.due = this.scheduler.now() + this.intervalMs;
    this.timer = this.scheduler.setTimeout(() => this.fired(), this.intervalMs, { unref: true });
  }

  private fired(): void {
    this.samples.push(Math.max(0, this.scheduler.now() - this.due));
    if (this.samples.length > this.window) this.samples.shift();
    this.arm();
  }
}

/** `vigil_mcp_server_state` samples: per server, 1 for its state and 0 for the others. Pure. */
export function serverStateSamples(states: readonly Pick<ServerState, "name" | "state">[]): CollectedSample[] {
  const out: CollectedSample[] = [];
  for (const s of states) for (const state of SERVER_STATES) out.push({ labels: { server: s.name, state }, value: s.state === state ? 1 : 0 });
  return out;
}

/** Open descriptors: the entries of /proc/self/fd, less the one reading them; null where unreadable (not Linux). */
export function openFds(dir = "/proc/self/fd"): number | null {
  try {
    return Math.max(0, readdirSync(dir).length - 1);
  } catch {
    return null;
  }
}

export interface DaemonMetricsSources {
  serverStates(): readonly Pick<ServerState, "name" | "state">[];
  sessionsOpen(): number;
  sseClients(): number;
}

const one = (value: number): CollectedSample[] => [{ labels: {}, value }];

/** Registers the daemon's collectors and starts the lag sampler; the returned function undoes both. */
export function registerDaemonMetrics(sources: DaemonMetricsSources): () => void {
  if (!METRICS.enabled) return () => {};
  const lag = new LagSampler();
  lag.start();
  const startTime = performance.timeOrigin / 1000;
  const families: CollectedFamily[] = [
    { kind: "gauge", name: MCP_COLLECTED.state, help: "MCP server state: 1 for the state each server is in, 0 for the others", read: () => serverStateSamples(sources.serverStates()) },
    { kind: "gauge", name: PROCESS_COLLECTED.sessionsOpen, help: "Sessions open in the daemon", read: () => one(sources.sessionsOpen()) },
    { kind: "gauge", name: PROCESS_COLLECTED.sseClients, help: "SSE clients attached to session frame streams", read: () => one(sources.sseClients()) },
    { kind: "gauge", name: PROCESS_COLLECTED.residentMemory, help: "Resident memory of the daemon process", read: () => one(process.memoryUsage.rss()) },
    { kind: "gauge", name: PROCESS_COLLECTED.eventLoopLag, help: `Largest event-loop lag over the last ${(LAG_WINDOW * LAG_INTERVAL_MS) / 1000} s (how late a ${LAG_INTERVAL_MS} ms timer fired)`, read: () => one(lag.lagSeconds) },
    { kind: "gauge", name: PROCESS_COLLECTED.buildInfo, help: "The vigil build: version and commit, as labels; always 1", read: () => [{ labels: { version: VERSION, commit: COMMIT }, value: 1 }] },
    { kind: "gauge", name: PROCESS_COLLECTED.startTime, help: "When the daemon process started, in seconds since the Unix epoch", read: () => one(startTime) },
  ];
  // Where /proc is not there to read, the family is left out rather than reported as 0.
  if (openFds() !== null) {
    families.push({ kind: "gauge", name: PROCESS_COLLECTED.openFds, help: "Open file descriptors of the daemon process", read: () => { const n = openFds(); return n === null ? [] : one(n); } });
  }
  const offs = families.map((f) => METRICS.collect(f));
  return () => {
    lag.stop();
    for (const off of offs) off();
  };
}
