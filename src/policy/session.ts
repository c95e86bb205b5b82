/**
 * Per-session policy state: the tool-call count, the rate bucket, and the last seen definition
 * digest of each tool (for pins). Values are immutable; every change returns a new session.
 *
 * Limits are consumed only by calls that are actually forwarded to the server: evaluation checks
 * availability without mutating, and the proxy calls recordForwardedCall when it forwards a call
 * (including a dry-run would_deny call, which is forwarded too). A denied call costs nothing, so a
 * client hammering a denied tool cannot exhaust the budget for allowed ones.
 */
import type { CompiledPolicy } from "./compile.ts";

/**
 * Token bucket: holds up to `capacity` (= rate.calls) tokens, refills continuously at
 * calls / per_seconds, starts full; a call needs one token. Times are caller-supplied
 * milliseconds from a monotonic clock.
 */
export interface RateBucket {
  readonly capacity: number;
  readonly refillPerMs: number;
  readonly tokens: number;
  /** When `tokens` was last computed; null until the first forwarded call (the bucket is full). */
  readonly updatedMs: number | null;
}

export interface PolicySession {
  /** Calls forwarded so far (counted against limits.max_tool_calls). */
  readonly toolCalls: number;
  /** null when the policy has no rate limit. */
  readonly bucket: RateBucket | null;
  /** Tool name → last seen definition digest from tools/list (DEFINITION_CONFLICT if ambiguous). */
  readonly definitions: ReadonlyMap<string, string>;
}

/** Recorded when one tools/list result names a tool twice with different definitions: never equals a pin. */
export const DEFINITION_CONFLICT = "conflict";

// Floating-point refill can land a hair under a whole token at exactly the expected instant.
const TOKEN_EPSILON = 1e-9;

export function createPolicySession(policy: CompiledPolicy): PolicySession {
  const bucket = policy.rate
    ? {
        capacity: policy.rate.calls,
        refillPerMs: policy.rate.calls / (policy.rate.perSeconds * 1000),
        tokens: policy.rate.calls,
        updatedMs: null,
      }
    : null;
  return { toolCalls: 0, bucket, definitions: new Map() };
}

/** Tokens in the bucket at `nowMs`. A clock that appears to go backwards adds nothing. */
export function tokensAt(bucket: RateBucket, nowMs: number): number {
  if (bucket.updatedMs === null) return bucket.capacity;
  const elapsed = Math.max(0, nowMs - bucket.updatedMs);
  return Math.min(bucket.capacity, bucket.tokens + elapsed * bucket.refillPerMs);
}

/** True when the bucket can pay for one call at `nowMs`. */
export function hasToken(bucket: RateBucket, nowMs: number): boolean {
  return tokensAt(bucket, nowMs) >= 1 - TOKEN_EPSILON;
}

/** The session after one call was forwarded at `nowMs`: count + 1, one token spent (never below 0). */
export function recordForwardedCall(session: PolicySession, nowMs: number): PolicySession {
  const { bucket } = session;
  return {
    ...session,
    toolCalls: session.toolCalls + 1,
    bucket: bucket && {
      ...bucket,
      tokens: Math.max(0, tokensAt(bucket, nowMs) - 1),
      updatedMs: bucket.updatedMs === null ? nowMs : Math.max(bucket.updatedMs, nowMs),
    },
  };
}
