// Property/fuzz test of the occurrence check (src/events/rules/occurrence.ts; issue 11 items 3–5):
// for random and adversarial occurrences (huge, deep, wrong types, lone surrogates, 1e400, missing
// fields, long strings), the check never throws, decides as a correct client must, and whatever it
// lets through — an accepted event, or the gap notice and dedup key of a refused one — can be
// stored, committed and read back by the real events store: no occurrence can wedge the state.
// Fixed seed in `bun test`; `make fuzz` runs it with a random, printed seed (VIGIL_FUZZ_SEED).
import { describe, expect, test } from "bun:test";
import { canonicalJson } from "../../../src/shared/canonical-json.ts";
import { OCCURRENCE_LIMITS, checkOccurrence, isStorableCursor } from "../../../src/events/rules/occurrence.ts";
import { parsePollResult } from "../../../src/events/rules/poll-rules.ts";
import { storeHarness } from "../../helpers/events-store.ts";
import { fuzzCount, fuzzSeed, hostileCase, prng } from "../../helpers/hostile-occurrences.ts";

const SEED = fuzzSeed();
const CASES = fuzzCount("VIGIL_FUZZ_CASES", 600);
const { setup, openStore } = storeHarness("vigil-occurrence-fuzz", { maxPending: 1000, maxPendingBytes: 64 * 1024 * 1024 });

describe(`occurrence check, fuzzed (seed ${SEED}, ${CASES} cases; replay: VIGIL_FUZZ_SEED=${SEED} make fuzz)`, () => {
  test("decides as a client must, never throws, and everything it passes on can be stored and read back", async () => {
    console.log(`occurrence fuzz seed: ${SEED} (replay with VIGIL_FUZZ_SEED=${SEED} make fuzz)`);
    const rand = prng(SEED);
    const dir = setup();
    let store = await openStore(dir);
    const kinds = new Set<string>();
    for (let i = 0; i < CASES; i++) {
      const c = hostileCase(rand, { name: "ticket.updated", maxHugeBytes: 300_000, maxDepth: 100_000 });
      const what = `case ${i} (${c.kind}), seed ${SEED}`;
      kinds.add(c.kind.replace(/\d+/g, "N"));
      const check = checkOccurrence(JSON.parse(c.raw));
      expect({ what, ok: check.ok }).toEqual({ what, ok: c.valid });

      const key = `fixture\0ticket.updated\0{"i":${i % 7}}`;
      if (check.ok) {
        const event = check.occurrence;
        // Kept as sent: serializable, canonical, and its text unchanged by a JSON round trip (-0 is 0 in JSON).
        const text = JSON.stringify(event);
        expect(JSON.stringify(JSON.parse(text))).toBe(text);
        expect(() => canonicalJson(event)).not.toThrow();
        const added = store.tryAdd({ action: "follow_up", server: "fixture", name: "ticket.updated", arguments: {}, event });
        expect(added).not.toBeNull();
        store.markDone([added!.seq]);
        const cursor = isStorableCursor(event.cursor) ? event.cursor : null;
        store.setSubscription(key, { cursor, recent: [event.eventId!] });
      } else {
        expect(check.problem.length).toBeLessThan(200);
        if (check.eventId !== null) {
          expect(check.eventId.length).toBeLessThanOrEqual(OCCURRENCE_LIMITS.reportedIdChars + 1);
          expect(check.eventId.isWellFormed()).toBe(true);
        }
        const notice = { gap: true as const, cursor: null, reason: "invalid_event", eventId: check.eventId, problem: check.problem };
        const added = store.tryAdd({ action: "follow_up", server: "fixture", name: "ticket.updated", arguments: {}, event: notice });
        store.markDone([added!.seq]);
        if (check.seenKey !== null) store.setSubscription(key, { cursor: null, recent: [check.seenKey] });
      }
      if (i % 100 === 99) {
        await store.commit();
        // A restart reads back what was written: the snapshot passes its own validation.
        await store.close();
        store = await openStore(dir);
      }
    }
    await store.commit();
    // The generator reached every kind of hostility at least once.
    expect(kinds.size).toBeGreaterThanOrEqual(20);
  });

  test("a whole page of hostile occurrences: each entry judged in place, in order, with bounded work", () => {
    const rand = prng(SEED ^ 0x5eed);
    const cases = Array.from({ length: 200 }, () => hostileCase(rand, { name: "ticket.updated", maxHugeBytes: 10_000, maxDepth: 100_000 }));
    const page = parsePollResult(JSON.parse(`{"events":[${cases.map((c) => c.raw).join(",")}],"cursor":"9"}`));
    if ("error" in page) throw new Error(page.error);
    expect(page.entries.map((e) => e.ok)).toEqual(cases.map((c) => c.valid));
    expect(page.cursor).toBe("9");
  });

  test("the issue's cases: a 60,000-deep event and a 2,000-character eventId are refused, with the id quoted and cut", () => {
    const deep = JSON.parse(`{"eventId":"d","name":"n","data":${'{"a":'.repeat(60_000)}1${"}".repeat(60_000)}}`);
    expect(checkOccurrence(deep)).toMatchObject({ ok: false, eventId: "d", seenKey: "d", problem: "the event is nested deeper than 64 levels" });
    const long = "x".repeat(2000);
    const check = checkOccurrence({ eventId: long, name: "n" });
    expect(check).toMatchObject({ ok: false, eventId: `${"x".repeat(256)}…` });
    // The dedup key of an unstorable id can never equal an accepted (well-formed) one.
    if (check.ok) throw new Error("unreachable");
    expect(check.seenKey!.isWellFormed()).toBe(false);
    expect(check.seenKey!.length).toBeLessThan(100);
  });
});
