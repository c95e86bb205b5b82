/**
 * Seeded generator of hostile MCP Events occurrences for the fuzz tests (issue 11 items 3–5):
 * each case is the occurrence's JSON *text*, so it can carry what a decoded value cannot show
 * (1e400, lone-surrogate escapes, 60,000 levels of nesting).
 *
 * The seed: VIGIL_FUZZ_SEED (an unsigned 32-bit integer) or, unset, a fixed one, so `bun test` in
 * CI is repeatable; `make fuzz` passes a random one and prints it so a failure can be replayed
 * with `VIGIL_FUZZ_SEED=<n> make fuzz`.
 */

export const FIXED_FUZZ_SEED = 20_261_101;

export function fuzzSeed(): number {
  const raw = process.env.VIGIL_FUZZ_SEED;
  if (raw === undefined || raw === "") return FIXED_FUZZ_SEED;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) throw new Error(`VIGIL_FUZZ_SEED must be an unsigned 32-bit integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** How many cases to run: `name` from the environment when set (make fuzz raises it), else `fallback`. */
export function fuzzCount(name: string, fallback: number): number {
  const n = Number(process.env[name] ?? fallback);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** mulberry32: small, fast, good enough to pick cases; the same seed gives the same cases. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export interface HostileCase {
  /** What kind of hostility (for failure messages). */
  kind: string;
  /** The occurrence as the server writes it (JSON text of any value). */
  raw: string;
  /** Whether a correct client must accept it (a well-formed occurrence within every cap). */
  valid: boolean;
}

export interface CaseOptions {
  /** The event name a well-formed case carries. */
  name: string;
  /** Upper bound for the "huge" payloads, in bytes of text (keeps e2e under the control body cap). */
  maxHugeBytes: number;
  /** Upper bound for deep nesting (60,000 is the issue's case). */
  maxDepth: number;
}

const j = JSON.stringify;

/** One hostile (or, now and then, barely valid) occurrence. */
export function hostileCase(rand: () => number, o: CaseOptions): HostileCase {
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const id = `fz-${int(0, 1e9)}`;
  const ts = j("2026-01-01T00:00:00Z");
  const body = (fields: Record<string, string>) => `{${Object.entries(fields).map(([k, v]) => `${j(k)}:${v}`).join(",")}}`;
  const base = () => ({ eventId: j(id), name: j(o.name), timestamp: ts, data: `{"n":${int(0, 99)}}` });
  const nest = (depth: number, leaf: string) => {
    const arrays = rand() < 0.5;
    return arrays ? `${"[".repeat(depth)}${leaf}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}${leaf}${"}".repeat(depth)}`;
  };
  const wrongType = () => pick(["7", "-1.5", "true", "false", "null", "[]", '["x"]', "{}", '{"id":"x"}']);

  switch (int(0, 13)) {
    case 0: {
      const long = int(1025, 5000);
      return { kind: `eventId of ${long} characters`, raw: body({ ...base(), eventId: j("i".repeat(long)) }), valid: false };
    }
    case 1:
      return { kind: "eventId of exactly 1024 characters", raw: body({ ...base(), eventId: j(`${id}-`.padEnd(1024, "k")) }), valid: true };
    case 2: {
      const depth = int(64, o.maxDepth);
      return { kind: `data nested ${depth} deep`, raw: body({ ...base(), data: nest(depth, "1") }), valid: false };
    }
    case 3: {
      const field = pick(["eventId", "name", "timestamp", "cursor"] as const);
      const value = wrongType();
      // null is a fine cursor and an absent timestamp is fine; everything else here is a wrong type.
      const valid = field === "cursor" && value === "null";
      return { kind: `${field} = ${value}`, raw: body({ ...base(), [field]: value }), valid };
    }
    case 4: {
      const field = pick(["eventId", "name", "timestamp"] as const);
      return { kind: `lone surrogate in ${field}`, raw: body({ ...base(), [field]: `"x\\ud800y"` }), valid: false };
    }
    case 5: {
      const n = pick(["1e400", "-1e400", "1E999"]);
      return { kind: `non-finite number ${n}`, raw: body({ ...base(), data: `{"v":${n}}` }), valid: false };
    }
    case 6: {
      const n = pick(["1e308", "-0", "5e-324", "123456789012345678901234567890"]);
      return { kind: `extreme but finite number ${n}`, raw: body({ ...base(), data: `{"v":${n}}` }), valid: true };
    }
    case 7: {
      const field = pick(["eventId", "name"] as const);
      const { [field]: _gone, ...rest } = base();
      return { kind: `missing ${field}`, raw: body(rest), valid: false };
    }
    case 8: {
      const field = pick(["timestamp", "data"] as const);
      const { [field]: _gone, ...rest } = base();
      return { kind: `missing ${field}`, raw: body(rest), valid: true };
    }
    case 9: {
      const bytes = int(1000, o.maxHugeBytes);
      return { kind: `a ${bytes}-byte payload`, raw: body({ ...base(), data: `{"blob":${j("z".repeat(bytes))}}` }), valid: true };
    }
    case 10:
      return { kind: "not an object", raw: pick(["[]", '"event"', "42", "null", "true", `[${body(base())}]`]), valid: false };
    case 11: {
      const field = pick(["name", "timestamp", "cursor"] as const);
      const long = field === "cursor" ? 65_537 : int(257, 3000);
      return { kind: `${field} of ${long} characters`, raw: body({ ...base(), [field]: j("c".repeat(long)) }), valid: false };
    }
    case 12:
      return { kind: "empty eventId", raw: body({ ...base(), eventId: '""' }), valid: false };
    default: {
      // A random tree in data: strings with escapes, numbers, nesting within the limit.
      return { kind: "a random payload", raw: body({ ...base(), data: randomTree(rand, int(1, 40)) }), valid: true };
    }
  }
}

function randomTree(rand: () => number, budget: number): string {
  const leaf = () => {
    const r = rand();
    if (r < 0.25) return j(`s${Math.floor(rand() * 1e6)}\u2028<"\\>\u0000`);
    if (r < 0.5) return String(Math.floor(rand() * 1e9) / 7);
    if (r < 0.6) return "null";
    if (r < 0.7) return rand() < 0.5 ? "true" : "false";
    return '"\\ud83d\\ude00 ok"';
  };
  // Built iteratively up to depth 40 (inside the 64-level limit with the envelope around it).
  let text = leaf();
  for (let i = 0; i < budget; i++) {
    text = rand() < 0.5 ? `[${text},${leaf()}]` : `{"k${i}":${text},"__proto__":${leaf()}}`;
  }
  return `{"tree":${text}}`;
}
