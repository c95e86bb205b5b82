/**
 * The pieces every old-vs-new micro-bench (bench/<area>/hotpath*.ts) shares: its `--iterations`
 * argument, a timer, and the runner that times the two (or more) variants of a step alternately,
 * in rounds, in the same process — so that the machine's drift hits every variant alike.
 */
import { fmt, median } from "./report.ts";

/** Rounds per variant; the median of them is what a bench reports. */
export const ROUNDS = 7;

export interface IterationsArg {
  /** The command line shown in the usage message, e.g. `bun bench/serve/hotpath.ts [--iterations N]`. */
  usage: string;
  fallback: number;
  min: number;
  max: number;
}

/** `--iterations N` from the command line (`fallback` without it); out of range: usage on stderr, exit 2. */
export function iterations(arg: IterationsArg): number {
  const i = process.argv.indexOf("--iterations");
  const n = i >= 0 ? Number(process.argv[i + 1]) : arg.fallback;
  if (!Number.isInteger(n) || n < arg.min || n > arg.max) {
    process.stderr.write(`usage: ${arg.usage}   (${fmt(arg.min)} to ${fmt(arg.max)}; default ${fmt(arg.fallback)})\n`);
    process.exit(2);
  }
  return n;
}

/**
 * µs per call of `f` over `n` calls (awaited one at a time when it returns a promise): wall clock,
 * or with `cpu` this process's CPU time (every thread: the thread pool's share of an fsync counts,
 * the wait for the disk does not).
 */
export async function timeIt(n: number, f: () => unknown, cpu = false): Promise<number> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const x = f();
    if (x instanceof Promise) await x;
  }
  if (cpu) {
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / n;
  }
  return ((performance.now() - t0) * 1000) / n;
}

export interface AlternateOptions<T> {
  /** Calls per variant per round. */
  calls: number;
  /** Calls per variant before the rounds, untimed. */
  warmup: number;
  /** µs per call of variant `v` over `n` calls (default, for a variant that is a function: `timeIt`, wall clock). */
  time?: (n: number, v: T) => Promise<number>;
  rounds?: number;
}

/**
 * The median µs per call of each variant over alternating rounds: each round times every variant
 * once, starting one further along each round, so that none always runs first (or last, on the
 * cache the others warmed).
 */
export async function alternate<T>(variants: readonly T[], o: AlternateOptions<T>): Promise<number[]> {
  const time = o.time ?? ((n: number, v: T) => timeIt(n, v as () => unknown));
  for (const v of variants) await time(o.warmup, v);
  const samples = variants.map(() => [] as number[]);
  for (let r = 0; r < (o.rounds ?? ROUNDS); r++) {
    for (let k = 0; k < variants.length; k++) {
      const v = (k + r) % variants.length;
      samples[v]!.push(await time(o.calls, variants[v]!));
    }
  }
  return samples.map(median);
}

/** One step, its code before and now. */
export interface Case {
  name: string;
  before: () => unknown;
  after: () => unknown;
  /** Both variants give this answer (checked once before timing). */
  same: (x: unknown) => string;
  /** Calls per round as a share of --iterations (a slow step runs fewer; default 1). */
  share?: number;
}

/** A `| step | before µs | now µs | saved µs | speed-up |` row. */
export const beforeNowRow = (name: string, before: number, now: number) =>
  `| ${name} | ${fmt(before, 2)} | ${fmt(now, 2)} | ${fmt(before - now, 2)} | ${fmt(before / now, 2)} × |`;

/** A titled Markdown table of `beforeNowRow` rows, as lines (a blank line after the title and at the end). */
export const beforeNowTable = (title: string, rows: readonly string[]): string[] => [
  title,
  "",
  "| step | before µs | now µs | saved µs | speed-up |",
  "| --- | ---: | ---: | ---: | ---: |",
  ...rows,
  "",
];

/** Each case checked (both variants give the same answer), then timed alternately: one row each. */
export async function beforeNowRows(n: number, cases: readonly Case[]): Promise<string[]> {
  const rows: string[] = [];
  for (const c of cases) {
    const calls = Math.max(20, Math.floor(n * (c.share ?? 1)));
    const [b, a] = [await c.before(), await c.after()];
    if (c.same(b) !== c.same(a)) throw new Error(`${c.name}: the two variants disagree (${c.same(b)} vs ${c.same(a)})`);
    const [mb, ma] = await alternate([c.before, c.after], { calls, warmup: Math.min(calls, 5000) });
    rows.push(beforeNowRow(c.name, mb!, ma!));
  }
  return rows;
}

export interface LoopbackPosts {
  body: Uint8Array;
  headers?: Record<string, string>;
  /** Requests in flight from this process. */
  inFlight: number;
  /** Checks what the handler's `read` gave (throws on a wrong body). */
  check?: (read: unknown) => void;
}

/**
 * Process CPU µs per request (server and clients: the clients' share is the same for every `read`,
 * so a difference is the read's) of `n` POSTs of `o.body` to a loopback Bun.serve whose handler only
 * reads the body with `read` and answers `{}`.
 */
export async function loopbackReadCpu(n: number, read: (req: Request) => Promise<unknown>, o: LoopbackPosts): Promise<number> {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 30,
    maxRequestBodySize: 1024 * 1024,
    async fetch(req) {
      const got = await read(req);
      o.check?.(got);
      return new Response("{}");
    },
  });
  const url = `http://127.0.0.1:${server.port}/`;
  let next = 0;
  const client = async () => {
    while (next++ < n) await (await fetch(url, { method: "POST", body: o.body, headers: o.headers, signal: AbortSignal.timeout(30_000) })).arrayBuffer();
  };
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: o.inFlight }, client));
  const c = process.cpuUsage(c0);
  server.stop(true);
  return (c.user + c.system) / n;
}
