/**
 * The snapshot record copy (store/snapshot.ts copyRecord, issue 16): the dedup window is checked and
 * copied by one loop instead of a JSON round trip and the schema, and the result must be what the
 * whole-record path gives — the same record, the same private copy, the same refusal.
 */
import { describe, expect, test } from "bun:test";
import { copyRecord, copyWholeRecord, type SubscriptionRecord } from "../../../src/events/store/snapshot.ts";
import { EventsStoreError } from "../../../src/events/store/errors.ts";
import type { SubscriptionSpec } from "../../../src/events/types.ts";

const SPEC: SubscriptionSpec = { server: "tickets", name: "ticket.updated", arguments: { project: "p1", n: -0 }, action: "follow_up", delivery: "poll" };
const WEBHOOK = { token: "0123456789abcdef0123456789abcdef", secret: "whsec_AAAA", previous: null, subscription_id: null, refresh_before: null };

function errorOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(EventsStoreError);
    return `${(e as EventsStoreError).code}: ${(e as Error).message}`;
  }
  throw new Error("expected a refusal");
}

describe("copyRecord", () => {
  const records: [string, SubscriptionRecord][] = [
    ["an empty window", { cursor: null, recent: [] }],
    ["a full window and a cursor", { cursor: "c-9", recent: Array.from({ length: 1024 }, (_, i) => `evt-${i}`) }],
    ["a window over the bound (the newest 1,024 kept)", { cursor: "c", recent: Array.from({ length: 1500 }, (_, i) => `e${i}`) }],
    ["odd but valid ids (a lone surrogate, empty, 1,024 characters)", { cursor: null, recent: ["\udfff3:abc", "", "x".repeat(1024), "é"] }],
    ["a runtime spec and a webhook", { cursor: "7", recent: ["a", "b"], runtime: SPEC, webhook: WEBHOOK }],
    ["keys in another order, an undefined member", { recent: ["a"], webhook: undefined, cursor: "1" } as unknown as SubscriptionRecord],
  ];
  for (const [what, record] of records) {
    test(`${what}: the same record as the whole-record path, in the same key order`, () => {
      const fast = copyRecord(record);
      const whole = copyWholeRecord(record);
      expect(JSON.stringify(fast)).toBe(JSON.stringify(whole));
      expect(fast).toEqual(whole);
      expect(Object.keys(fast)).toEqual(Object.keys(whole));
    });
  }

  test("the copy is private: changing the caller's window or spec afterwards changes nothing stored", () => {
    const recent = ["a", "b"];
    const runtime = structuredClone(SPEC);
    const copy = copyRecord({ cursor: null, recent, runtime });
    recent.push("c");
    runtime.arguments.project = "other";
    expect(copy.recent).toEqual(["a", "b"]);
    expect(copy.runtime?.arguments.project).toBe("p1");
    expect(copy.recent).not.toBe(recent);
  });

  const bad: [string, SubscriptionRecord][] = [
    ["an id over 1,024 characters", { cursor: null, recent: ["ok", "x".repeat(1025)] }],
    ["an id that is not a string", { cursor: null, recent: ["ok", 5 as unknown as string] }],
    ["a hole in the window", { cursor: null, recent: ["a", , "c"] as unknown as string[] }],
    ["a window that is not an array", { cursor: null, recent: "abc" as unknown as string[] }],
    ["a bad cursor next to a good window", { cursor: 5 as unknown as string, recent: ["a"] }],
    ["a bad runtime spec next to a good window", { cursor: null, recent: ["a"], runtime: { ...SPEC, server: "bad name" } }],
  ];
  for (const [what, record] of bad) {
    test(`${what}: refused with the whole-record path's error`, () => {
      expect(errorOf(() => copyRecord(record))).toBe(errorOf(() => copyWholeRecord(record)));
    });
  }
});
