/**
 * A stop statement's pending events (serve-stop.ts `pendingClaim`): the lowest seqs listed (at most
 * MAX_STOP_PENDING_LISTED), all of them counted and digested — so a queue of tens of thousands of
 * entries still makes a stop envelope within the verifier's 256 KiB bound, and the verifier still
 * checks the whole set against the ledger.
 */
import { describe, expect, test } from "bun:test";
import { MAX_STOP_PENDING_LISTED, pendingDigest } from "../../../src/evidence/serve-stop.ts";
import type { Statement } from "../../../src/evidence/statement.ts";
import { SESSION_BOUNDS, type SessionInput } from "../../../src/verify/session/session-input.ts";
import { verifySession } from "../../../src/verify/session/verify-session.ts";
import { SessionBuilder, testKey } from "./session-builder.ts";

const KEY = testKey();
const verify = (input: SessionInput) => verifySession(input, { trusted: [KEY.trusted] });
const codes = (input: SessionInput) => [...new Set(verify(input).reasons.map((r) => r.code))].sort();
type Events = { pending: number[]; pending_count: number; pending_sha256: string };
const events = (s: Statement) => s.predicate.events as Events;

/** `n` events received, the first `delivered` of them delivered. */
function queued(n: number, delivered = 0): SessionBuilder {
  const b = new SessionBuilder();
  for (let i = 0; i < n; i++) b.received(i);
  if (delivered > 0) b.delivered(Array.from({ length: delivered }, (_, i) => i));
  return b;
}

describe("a stop's pending events", () => {
  test("40,000 pending: the envelope stays far within its bound, and its claim holds (incomplete: events pending)", () => {
    const b = queued(40_000).stop(KEY);
    const envelope = b.stops[0]!;
    expect(envelope.length).toBeLessThan(SESSION_BOUNDS.envelopeBytes / 4);
    const r = verify(b.input());
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => f.code)).toEqual(["events_pending"]);
    expect(r.authentication.authenticated).toBe(true);
  });

  test("the whole set is checked: one seq past the listed ones that differs → predicate_mismatch", () => {
    const n = MAX_STOP_PENDING_LISTED + 5;
    const b = queued(n, 0);
    // The ledger's pending set is 0…n-1; the stop claims …n-2 and n+7 instead of n-1: same count, same list.
    const claimed = [...Array.from({ length: n - 1 }, (_, i) => i), n + 7];
    b.stop(KEY, (s) => (events(s).pending_sha256 = pendingDigest(claimed)));
    expect(codes(b.input())).toEqual(["events_pending", "predicate_mismatch"]);
  });

  test("a count that differs, a list that is not the lowest ascending, or too long → refused", () => {
    const count = queued(3).stop(KEY, (s) => (events(s).pending_count = 4));
    expect(codes(count.input())).toEqual(["events_pending", "predicate_mismatch"]);
    const order = queued(3).stop(KEY, (s) => (events(s).pending = [2, 1, 0]));
    expect(codes(order.input())).toEqual(["events_pending", "predicate_mismatch"]);
    const short = queued(3).stop(KEY, (s) => (events(s).pending = [0, 1]));
    expect(codes(short.input())).toEqual(["events_pending", "predicate_mismatch"]);
    const long = queued(MAX_STOP_PENDING_LISTED + 1).stop(KEY, (s) => (events(s).pending = Array.from({ length: MAX_STOP_PENDING_LISTED + 1 }, (_, i) => i)));
    expect(codes(long.input())).toEqual(["envelope_invalid", "events_pending"]);
  });

  test("a stop of before this format (a bare pending list) is not a statement this verifier reads", () => {
    const b = queued(2, 2);
    b.stop(KEY, (s) => (s.predicate.events = { pending: [] }));
    expect(codes(b.input())).toEqual(["envelope_invalid"]);
  });

  test("all delivered: closed, the empty set's digest is that of []", () => {
    const b = queued(2, 2).stop(KEY);
    expect(verify(b.input()).verdict).toBe("closed");
    expect(JSON.parse(Buffer.from(JSON.parse(b.stops[0]!.toString()).payload, "base64").toString()).predicate.events).toEqual({
      pending: [],
      pending_count: 0,
      pending_sha256: pendingDigest([]),
    });
  });
});
