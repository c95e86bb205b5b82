/**
 * The Prometheus text exposition format, version 0.0.4 (what `GET /metrics` answers): one
 * `# HELP` and `# TYPE` line per family, then its samples; histograms as cumulative `_bucket`
 * series with `le`, then `_sum` and `_count`. Pure: the registry in, the text out — run only when
 * scraped, never on a hot path.
 */
import type { CollectedFamily, Family, MetricKind, MetricsRegistry } from "./registry.ts";
import { CounterChild, GaugeChild, HistogramChild } from "./registry.ts";

export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export function renderMetrics(registry: MetricsRegistry): string {
  const out: string[] = [];
  for (const family of registry.families) renderFamily(out, family);
  for (const family of registry.collected()) renderCollected(out, family);
  return out.join("");
}

function renderFamily(out: string[], family: Family<MetricKind, string>): void {
  header(out, family.name, family.help, family.kind);
  for (const { values, child } of family.series()) {
    const labels = labelText(family.labelNames, values);
    if (child instanceof HistogramChild) {
      let cumulative = 0;
      for (let i = 0; i < child.bounds.length; i++) {
        cumulative += child.counts[i]!;
        out.push(`${family.name}_bucket${withLe(labels, formatNumber(child.bounds[i]!))} ${cumulative}\n`);
      }
      out.push(`${family.name}_bucket${withLe(labels, "+Inf")} ${child.count}\n`);
      out.push(`${family.name}_sum${labels} ${formatNumber(child.sum)}\n`);
      out.push(`${family.name}_count${labels} ${child.count}\n`);
    } else if (child instanceof CounterChild || child instanceof GaugeChild) {
      out.push(`${family.name}${labels} ${formatNumber(child.value)}\n`);
    }
  }
}

function renderCollected(out: string[], family: CollectedFamily): void {
  header(out, family.name, family.help, family.kind);
  for (const s of family.read()) {
    const names = Object.keys(s.labels);
    out.push(`${family.name}${labelText(names, names.map((n) => s.labels[n]!))} ${formatNumber(s.value)}\n`);
  }
}

function header(out: string[], name: string, help: string, kind: MetricKind): void {
  out.push(`# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${kind}\n`);
}

function labelText(names: readonly string[], values: readonly string[]): string {
  if (names.length === 0) return "";
  const parts = names.map((n, i) => `${n}="${escapeLabelValue(values[i]!)}"`);
  return `{${parts.join(",")}}`;
}

function withLe(labels: string, le: string): string {
  return labels === "" ? `{le="${le}"}` : `${labels.slice(0, -1)},le="${le}"}`;
}

export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

export function formatNumber(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}
