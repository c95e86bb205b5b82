// Fuzz, end to end (issue 11 items 3–5): seeded random and adversarial occurrences (huge, deep,
// wrong types, lone surrogates, 1e400, missing fields, long strings) written verbatim by the events
// fixture (/control/emit_raw) through poll and through push, against dist/vigil. After every one,
// the next valid event is delivered; a valid hostile-looking one is delivered too, an invalid one
// never is. Fixed seed and a few cases in `bun test`; `make fuzz` runs more with a random, printed
// seed (VIGIL_FUZZ_SEED, VIGIL_FUZZ_E2E_CASES). No timing is asserted; every wait is bounded.
import { describe, expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import { StdioServe, eventsEnvironment, httpServer, isEventFrame, isStatus } from "../helpers/events-serve.ts";
import { fuzzCount, fuzzSeed, hostileCase, prng } from "../helpers/hostile-occurrences.ts";
import type { Frame } from "../helpers/serve.ts";

const cleanups = e2eSuite();

const TICKETS = "ticket.updated";
const SEED = fuzzSeed();
const CASES = fuzzCount("VIGIL_FUZZ_E2E_CASES", 8);

const eventIdOf = (raw: string): unknown => {
  const v: unknown = JSON.parse(raw);
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as { eventId?: unknown }).eventId : undefined;
};

describe(`hostile occurrences through vigil serve, fuzzed (seed ${SEED}, ${CASES} cases per mode)`, () => {
  for (const [offset, mode] of [[0, "poll"], [1, "push"]] as const) {
    test(`over ${mode}: after every hostile occurrence the next valid event is delivered`, async () => {
      console.log(`events e2e fuzz seed: ${SEED} (replay with VIGIL_FUZZ_SEED=${SEED} make fuzz)`);
      const env = await eventsEnvironment(cleanups, {
        servers: (fx) => [httpServer(fx!, "tickets", [{ name: TICKETS, delivery: mode, action: "notify" }])],
      });
      const fx = env.fixture!;
      const serve = StdioServe.start(cleanups, env);
      await serve.until(isStatus("subscribed"));
      const rand = prng(SEED + offset);
      const sentinels: string[] = [];
      for (let i = 0; i < CASES; i++) {
        const c = hostileCase(rand, { name: TICKETS, maxHugeBytes: 300_000, maxDepth: 60_000 });
        await fx.control("emit_raw", { raw: c.raw });
        const sentinel = `sentinel-${mode}-${i}`;
        sentinels.push(sentinel);
        await fx.control("emit", { event_id: sentinel });
        const label = `case ${i} (${c.kind}), seed ${SEED}`;
        await serve.until(isEventFrame(sentinel), 15_000).catch((e) => {
          throw new Error(`${label}: the next valid event was not delivered: ${e instanceof Error ? e.message : String(e)}`);
        });
        const id = eventIdOf(c.raw);
        if (c.valid) expect({ label, delivered: serve.count(isEventFrame(id as string)) }).toEqual({ label, delivered: 1 });
        else if (typeof id === "string") expect({ label, delivered: serve.count(isEventFrame(id)) }).toEqual({ label, delivered: 0 });
      }
      // Each valid event exactly once, in order; nothing overflowed the stack.
      const delivered = serve.frames.filter((f: Frame) => f.type === "mcp_event").map((f) => (f.event as { eventId: string }).eventId);
      expect(delivered.filter((id) => id.startsWith("sentinel-"))).toEqual(sentinels);
      expect(serve.client.stderrText()).not.toContain("Maximum call stack size exceeded");
      expect(serve.frames.some((f) => isStatus("error")(f) && String(f.error).includes("call stack"))).toBe(false);
    });
  }
});
