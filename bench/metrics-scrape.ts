/**
 * A Prometheus-like scraper for the bench harnesses: `GET /metrics` every SCRAPE_EVERY_MS with the
 * whole body read, one scrape at a time (a tick that finds the previous scrape still running is
 * skipped and counted, as Prometheus does), each timed from the request to its last byte.
 */

export const SCRAPE_EVERY_MS = 1_000;
export const SCRAPE_TIMEOUT_MS = 10_000;

export interface Scrape {
  start: number;
  end: number;
  bytes: number;
  text: string;
}

export class Scraper {
  readonly done: Scrape[] = [];
  skipped = 0;
  failure: string | null = null;
  private running: Promise<void> | null = null;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly url: string) {
    this.timer = setInterval(() => this.tick(), SCRAPE_EVERY_MS);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private tick(): void {
    if (this.running !== null) {
      this.skipped++;
      return;
    }
    this.running = scrape(this.url).then(
      (s) => void this.done.push(s),
      (e: unknown) => void (this.failure ??= e instanceof Error ? e.message : String(e)),
    ).finally(() => (this.running = null));
  }
}

export async function scrape(url: string): Promise<Scrape> {
  const start = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics: HTTP ${res.status}`);
  return { start, end: performance.now(), bytes: Buffer.byteLength(text), text };
}

/** The sum of a counter's samples whose labels include every `label="value"` given. */
export function counterSum(text: string, name: string, labels: string[]): number {
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith(`${name}{`) && labels.every((l) => line.includes(l))) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}
