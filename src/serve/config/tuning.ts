/**
 * The tuning knobs of serve.md "Tuning knobs": timings and bounds that tests and operators change
 * through the environment. Each value is a decimal integer (digits only: no sign, no exponent, no
 * unit) within the bounds below; unset or empty means the default. A bad value is a
 * VigilError("config_invalid") (exit 2) naming the variable, one line per bad variable. Checked
 * here too: `VIGIL_LOG_LEVEL` (info or debug) and reconnect initial wait ≤ its cap.
 *
 * The first nine are the spec's list; the rest are the other timings of serve.md §6 ("in the same
 * form when needed"): the healthy period that restores the re-discovery budget (10 min), the retry
 * interval of refused subscriptions (1 h), the retry backoff cap of configured subscriptions (60 s),
 * how many sessions are restored at boot (32) and within which TTL, the push-stream buffer and the
 * JWKS fetch deadline.
 */
import * as v from "valibot";
import { VigilError } from "../../shared/errors.ts";
import { LOG_LEVELS, parseLogLevel } from "../../shared/log.ts";
import type { Env } from "./env.ts";

interface Knob {
  /** The environment variable. */
  readonly env: string;
  readonly default: number;
  readonly min: number;
  readonly max: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Every knob: variable, default and inclusive bounds. */
export const TUNING_KNOBS = {
  /** Floor on a poll's `nextPollMs`; also the wait after a `hasMore` page with nothing new. */
  pollFloorMs: { env: "VIGIL_EVENTS_POLL_FLOOR_MS", default: 1000, min: 1, max: HOUR },
  /** Minimum gap between two follow_up injections into one session. 0 = inject at once. */
  coalesceMs: { env: "VIGIL_EVENTS_COALESCE_MS", default: 2000, min: 0, max: HOUR },
  /** A push stream silent this long is presumed dead and reconnected. */
  streamIdleMs: { env: "VIGIL_EVENTS_STREAM_IDLE_MS", default: 70_000, min: 1, max: DAY },
  /** `ttlMs` asked for a webhook subscription (the server's grant wins). */
  webhookTtlMs: { env: "VIGIL_EVENTS_WEBHOOK_TTL_MS", default: HOUR, min: 100, max: 7 * DAY },
  /** Pending (undelivered) events per session, by count … */
  maxPending: { env: "VIGIL_EVENTS_MAX_PENDING", default: 1000, min: 1, max: 1_000_000 },
  /** … and by bytes. */
  maxPendingBytes: { env: "VIGIL_EVENTS_MAX_PENDING_BYTES", default: 16 * MiB, min: 1024, max: GiB },
  /** Deadline for a whole webhook body. */
  bodyTimeoutMs: { env: "VIGIL_EVENTS_BODY_TIMEOUT_MS", default: 10_000, min: 1, max: 10 * MINUTE },
  /** Per-message cap on every MCP path. */
  mcpMaxMessageBytes: { env: "VIGIL_MCP_MAX_MESSAGE_BYTES", default: 32 * MiB, min: 1024, max: GiB },
  /** Grace between closing a stdio server's stdin and sweeping its process group. */
  shutdownGraceMs: { env: "VIGIL_SHUTDOWN_GRACE_MS", default: 3000, min: 0, max: 10 * MINUTE },
  /** Healthy time after which the re-discovery budget is restored. */
  healthyMs: { env: "VIGIL_EVENTS_HEALTHY_MS", default: 10 * MINUTE, min: 1, max: DAY },
  /** Retry interval of a permanently refused configured subscription. */
  refusedRetryMs: { env: "VIGIL_EVENTS_REFUSED_RETRY_MS", default: HOUR, min: 1, max: DAY },
  /** Cap of the retry backoff of configured subscriptions. */
  retryCapMs: { env: "VIGIL_EVENTS_RETRY_CAP_MS", default: MINUTE, min: 1, max: DAY },
  /** Sessions woken at boot to restore runtime subscriptions (most recently used first). */
  maxRestoredSessions: { env: "VIGIL_EVENTS_MAX_RESTORED_SESSIONS", default: 32, min: 0, max: 1024 },
  /** A runtime subscription is restored only within this time since its session's last client command. */
  runtimeTtlMs: { env: "VIGIL_EVENTS_RUNTIME_TTL_MS", default: 7 * DAY, min: 1, max: 365 * DAY },
  /** Notifications buffered per push stream: near the top it applies backpressure; overflow (drain-then-resume) is the last resort. */
  streamBuffer: { env: "VIGIL_EVENTS_STREAM_BUFFER", default: 256, min: 1, max: 1_000_000 },
  /**
   * Push streams open at once over streamable HTTP, process-wide. Each holds one of Bun's fetch
   * slots (256 per process unless BUN_CONFIG_MAX_HTTP_REQUESTS raises it) for its lifetime; past
   * this, subscriptions use poll where offered, so model calls and tool calls always find a slot.
   */
  maxHttpStreams: { env: "VIGIL_EVENTS_MAX_HTTP_STREAMS", default: 128, min: 1, max: 100_000 },
  /** Long poll: sent as `timeoutMs` on every events/poll (servers without long poll ignore it). 0 = off. */
  longPollMs: { env: "VIGIL_EVENTS_LONG_POLL_MS", default: 0, min: 0, max: 10 * MINUTE },
  /** Cap of the backoff (1 s doubling) while the model is unavailable: how long an outage may go unnoticed. */
  modelBackoffCapMs: { env: "VIGIL_MODEL_BACKOFF_CAP_MS", default: 5 * MINUTE, min: 1, max: DAY },
  /** First wait before an MCP server that failed or dropped is connected (or started) again; doubles per failure. */
  mcpReconnectInitialMs: { env: "VIGIL_MCP_RECONNECT_INITIAL_MS", default: SECOND, min: 1, max: HOUR },
  /** Cap of that backoff. */
  mcpReconnectCapMs: { env: "VIGIL_MCP_RECONNECT_CAP_MS", default: MINUTE, min: 1, max: DAY },
  /** A webhook delivery waits this long for its event to be stored (fdatasync) before it answers 503. */
  ackTimeoutMs: { env: "VIGIL_EVENTS_ACK_TIMEOUT_MS", default: 10_000, min: 1, max: 10 * MINUTE },
  /** Deadline for one JWKS fetch (headers and body). */
  jwksTimeoutMs: { env: "VIGIL_EVENTS_JWKS_TIMEOUT_MS", default: 5000, min: 1, max: 10 * MINUTE },
  /** A session's transcript moves to a new segment file at this size (old segments fall to `--transcript-retain-bytes`). */
  transcriptSegmentBytes: { env: "VIGIL_TRANSCRIPT_SEGMENT_BYTES", default: 64 * MiB, min: 1024, max: GiB },
} as const satisfies Record<string, Knob>;

export type TuningKnob = keyof typeof TUNING_KNOBS;
export type ServeTuning = { readonly [K in TuningKnob]: number };

function knobSchema(knob: Knob) {
  const expected = `expected an integer from ${knob.min} to ${knob.max}`;
  return v.pipe(
    v.string(expected),
    v.regex(/^[0-9]{1,16}$/, expected),
    v.transform(Number),
    v.minValue(knob.min, expected),
    v.maxValue(knob.max, expected),
  );
}

/** Reads every knob from `env`. Throws VigilError("config_invalid") listing every bad variable. */
export function loadServeTuning(env: Env = process.env): ServeTuning {
  const problems: string[] = [];
  const values: Partial<Record<TuningKnob, number>> = {};
  for (const key of Object.keys(TUNING_KNOBS) as TuningKnob[]) {
    const knob: Knob = TUNING_KNOBS[key];
    const raw = env[knob.env];
    if (raw === undefined || raw === "") {
      values[key] = knob.default;
      continue;
    }
    const result = v.safeParse(knobSchema(knob), raw);
    if (result.success) values[key] = result.output;
    else problems.push(`${knob.env}: ${result.issues[0].message} (got ${JSON.stringify(raw.slice(0, 32))})`);
  }
  problems.push(...crossChecks(env, values));
  if (problems.length > 0) throw new VigilError("config_invalid", problems.join("\n"));
  return values as ServeTuning;
}

/** `VIGIL_METRICS`: `on` (the default) or `off` (no registry kept, no `/metrics`, `--metrics-listen` refused). */
export const METRICS_ENV = "VIGIL_METRICS";

/** `VIGIL_METRICS` read: true for on (also unset or empty), false for off, null for anything else (refused below). Any case. */
export function metricsSetting(env: Env = process.env): boolean | null {
  const raw = env[METRICS_ENV];
  if (raw === undefined || raw === "") return true;
  const v = raw.toLowerCase();
  return v === "on" ? true : v === "off" ? false : null;
}

/**
 * The checks that are not one integer's bounds: the log level (read by shared/log.ts, which has no
 * way to refuse it), `VIGIL_METRICS` and a backoff whose first wait exceeds its cap (the cap would
 * silently win).
 */
function crossChecks(env: Env, values: Partial<Record<TuningKnob, number>>): string[] {
  const problems: string[] = [];
  if (metricsSetting(env) === null) {
    problems.push(`${METRICS_ENV}: expected "on" or "off" (got ${JSON.stringify((env[METRICS_ENV] ?? "").slice(0, 32))})`);
  }
  const level = env.VIGIL_LOG_LEVEL;
  if (level !== undefined && level !== "" && parseLogLevel(level) === null) {
    problems.push(`VIGIL_LOG_LEVEL: expected ${LOG_LEVELS.map((l) => JSON.stringify(l)).join(" or ")} (got ${JSON.stringify(level.slice(0, 32))})`);
  }
  const initial = values.mcpReconnectInitialMs;
  const cap = values.mcpReconnectCapMs;
  if (initial !== undefined && cap !== undefined && initial > cap) {
    const i = TUNING_KNOBS.mcpReconnectInitialMs.env;
    const c = TUNING_KNOBS.mcpReconnectCapMs.env;
    problems.push(`${i} (${initial}) is larger than ${c} (${cap}): the first wait must not exceed the cap`);
  }
  return problems;
}
