/**
 * The daemon's metrics (issue 15 item 1): counters, gauges and histograms with bounded label
 * sets, rendered in the Prometheus text exposition format 0.0.4 only when scraped (render.ts).
 *
 * Hot paths hold a child (`family.with({...})`, or `family.at(v1, v2, …)` in label order) and
 * call `inc()` / `observe()`: a property add, nothing else. A family keeps at most
 * MAX_SERIES_PER_FAMILY children; past that every new label set lands on one overflow child
 * whose labels are all "_overflow", so a misbehaving peer (thousands of event names) cannot grow
 * memory or the scrape without bound. Overflows are counted (`vigil_metrics_series_overflow_total`).
 *
 * Values that already live elsewhere (queue lengths, open fds, subscription states) are not
 * mirrored on every change: a collector (`collect`) reads them at scrape time.
 */

export const MAX_SERIES_PER_FAMILY = 2000;
export const OVERFLOW_LABEL = "_overflow";

export type MetricKind = "counter" | "gauge" | "histogram";
export type Labels<L extends string> = { readonly [K in L]: string };

/** Seconds: from 0.5 ms to 60 s, for latencies measured in vigil (fdatasync, model, tool calls). */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class CounterChild {
  value = 0;
  inc(by = 1): void {
    this.value += by;
  }
}

export class GaugeChild {
  value = 0;
  set(v: number): void {
    this.value = v;
  }
  inc(by = 1): void {
    this.value += by;
  }
  dec(by = 1): void {
    this.value -= by;
  }
}

export class HistogramChild {
  /** Per bucket (not cumulative; render.ts accumulates), plus the +Inf bucket last. */
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }
  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
  /** Observes the seconds since `startMs` (a `performance.now()` reading). */
  observeSince(startMs: number, nowMs: number = performance.now()): void {
    this.observe(Math.max(0, nowMs - startMs) / 1000);
  }
}

type ChildOf<K extends MetricKind> = K extends "counter" ? CounterChild : K extends "gauge" ? GaugeChild : HistogramChild;

export class Family<K extends MetricKind, L extends string = never> {
  readonly children = new Map<string, { values: readonly string[]; child: ChildOf<K> }>();
  private overflowed: ChildOf<K> | null = null;
  /** What `at` hands out while the registry is disabled: counted, never rendered. */
  private detached: ChildOf<K> | null = null;

  constructor(
    readonly kind: K,
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    readonly buckets: readonly number[],
    private readonly onOverflow: () => void,
    private readonly enabled: () => boolean,
  ) {}

  /** The child of these label values (in `labelNames` order). */
  at(...values: string[]): ChildOf<K> {
    if (!this.enabled()) return (this.detached ??= this.newChild());
    const key = values.length === 1 ? values[0]! : values.join("\u0000");
    const found = this.children.get(key);
    if (found !== undefined) return found.child;
    if (values.length !== this.labelNames.length) {
      throw new Error(`metric ${this.name}: expected ${this.labelNames.length} label values, got ${values.length}`);
    }
    if (this.children.size >= MAX_SERIES_PER_FAMILY) {
      this.onOverflow();
      return (this.overflowed ??= this.newChild());
    }
    const child = this.newChild();
    this.children.set(key, { values: [...values], child });
    return child;
  }

  with(labels: Labels<L>): ChildOf<K> {
    return this.at(...this.labelNames.map((n) => labels[n]));
  }

  /** Drops the children whose label `name` has `value` (a removed server, a closed session). */
  forget(name: L, value: string): void {
    const i = this.labelNames.indexOf(name);
    for (const [key, entry] of this.children) if (entry.values[i] === value) this.children.delete(key);
  }

  /** Every child with its label values, the overflow child last. */
  *series(): Generator<{ values: readonly string[]; child: ChildOf<K> }> {
    yield* this.children.values();
    if (this.overflowed !== null) yield { values: this.labelNames.map(() => OVERFLOW_LABEL), child: this.overflowed };
  }

  private newChild(): ChildOf<K> {
    if (this.kind === "counter") return new CounterChild() as ChildOf<K>;
    if (this.kind === "gauge") return new GaugeChild() as ChildOf<K>;
    return new HistogramChild(this.buckets) as ChildOf<K>;
  }
}

/** A sample a collector reports at scrape time. */
export interface CollectedSample {
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** A family whose samples are read at scrape time (gauges of state that lives elsewhere). */
export interface CollectedFamily {
  kind: "gauge" | "counter";
  name: string;
  help: string;
  read(): Iterable<CollectedSample>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export class MetricsRegistry {
  readonly families: Family<MetricKind, string>[] = [];
  private readonly collectors = new Map<string, CollectedFamily>();
  private readonly names = new Set<string>();
  private readonly overflow: CounterChild;
  private on = true;
  private readonly isEnabled = () => this.on;

  constructor() {
    this.overflow = this.counter("vigil_metrics_series_overflow_total", "Label sets folded into the _overflow series because a family reached its series cap", []).at();
  }

  /**
   * `VIGIL_METRICS=off`: nothing is kept per label set and nothing is served (the daemon does
   * not mount `/metrics`). Families already registered keep working as detached counters.
   */
  disable(): void {
    this.on = false;
    this.collectors.clear();
  }

  get enabled(): boolean {
    return this.on;
  }

  counter<L extends string = never>(name: string, help: string, labelNames: readonly L[]): Family<"counter", L> {
    return this.add(new Family("counter", name, help, labelNames, [], () => this.overflow.inc(), this.isEnabled));
  }

  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[]): Family<"gauge", L> {
    return this.add(new Family("gauge", name, help, labelNames, [], () => this.overflow.inc(), this.isEnabled));
  }

  histogram<L extends string = never>(name: string, help: string, labelNames: readonly L[], buckets: readonly number[] = LATENCY_BUCKETS_SECONDS): Family<"histogram", L> {
    return this.add(new Family("histogram", name, help, labelNames, buckets, () => this.overflow.inc(), this.isEnabled));
  }

  /**
   * Registers (or replaces, by name: a reopened session or a rebuilt daemon part registers again)
   * a family read at scrape time. Returns a function that removes it.
   */
  collect(family: CollectedFamily): () => void {
    if (!this.on) return () => {};
    this.checkName(family.name, this.collectors.has(family.name));
    this.collectors.set(family.name, family);
    return () => {
      if (this.collectors.get(family.name) === family) this.collectors.delete(family.name);
    };
  }

  collected(): Iterable<CollectedFamily> {
    return this.collectors.values();
  }

  private add<F extends Family<MetricKind, string>>(family: F): F {
    this.checkName(family.name, false);
    for (const l of family.labelNames) if (!LABEL.test(l) || l === "le") throw new Error(`metric ${family.name}: invalid label name ${l}`);
    this.names.add(family.name);
    this.families.push(family);
    // A family without labels has its one series from the start, so a scrape shows it at 0.
    if (family.labelNames.length === 0) family.at();
    return family;
  }

  private checkName(name: string, replacing: boolean): void {
    if (!NAME.test(name)) throw new Error(`invalid metric name ${name}`);
    if (this.names.has(name) || (!replacing && this.collectors.has(name))) throw new Error(`metric ${name} registered twice`);
  }
}
