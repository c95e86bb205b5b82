// The metrics registry and its text rendering (src/shared/metrics/): format 0.0.4 edge cases —
// label escaping, cumulative histogram buckets, the series cap's _overflow child, a disabled
// registry, collected families.
import { describe, expect, test } from "bun:test";
import { MAX_SERIES_PER_FAMILY, MetricsRegistry, OVERFLOW_LABEL } from "../../../src/shared/metrics/registry.ts";
import { escapeLabelValue, formatNumber, renderMetrics } from "../../../src/shared/metrics/render.ts";

const lines = (r: MetricsRegistry) => renderMetrics(r).split("\n").filter((l) => l !== "");

describe("renderMetrics", () => {
  test("HELP and TYPE per family; a family without labels shows 0 from the start", () => {
    const r = new MetricsRegistry();
    r.counter("vigil_x_total", "X things\nover two lines, with a \\ too", []);
    const out = lines(r);
    expect(out).toContain("# HELP vigil_x_total X things\\nover two lines, with a \\\\ too");
    expect(out).toContain("# TYPE vigil_x_total counter");
    expect(out).toContain("vigil_x_total 0");
    // the registry's own overflow counter is there too
    expect(out).toContain("vigil_metrics_series_overflow_total 0");
  });

  test("label values are escaped: backslash, double quote, newline", () => {
    const r = new MetricsRegistry();
    r.counter("vigil_y_total", "Y", ["server", "tool"]).at('a"b\\c', "line\nbreak").inc(2);
    expect(lines(r)).toContain('vigil_y_total{server="a\\"b\\\\c",tool="line\\nbreak"} 2');
    expect(escapeLabelValue('\\"\n')).toBe('\\\\\\"\\n');
  });

  test("a labelled family shows no sample until a child is made; with() and at() are the same child", () => {
    const r = new MetricsRegistry();
    const f = r.gauge("vigil_g", "G", ["session"]);
    expect(lines(r).filter((l) => l.startsWith("vigil_g"))).toEqual([]);
    f.with({ session: "s1" }).set(3);
    f.at("s1").inc();
    f.at("s2").dec(0.5);
    expect(lines(r).filter((l) => l.startsWith("vigil_g"))).toEqual(['vigil_g{session="s1"} 4', 'vigil_g{session="s2"} -0.5']);
    f.forget("session", "s1");
    expect(lines(r).filter((l) => l.startsWith("vigil_g"))).toEqual(['vigil_g{session="s2"} -0.5']);
  });

  test("histogram: cumulative buckets with le, +Inf equal to _count, _sum", () => {
    const r = new MetricsRegistry();
    const h = r.histogram("vigil_d_seconds", "D", ["mode"], [0.1, 1]);
    const c = h.at("poll");
    for (const v of [0.05, 0.1, 0.5, 2, 3]) c.observe(v);
    expect(lines(r).filter((l) => l.startsWith("vigil_d_seconds"))).toEqual([
      'vigil_d_seconds_bucket{mode="poll",le="0.1"} 2',
      'vigil_d_seconds_bucket{mode="poll",le="1"} 3',
      'vigil_d_seconds_bucket{mode="poll",le="+Inf"} 5',
      'vigil_d_seconds_sum{mode="poll"} 5.65',
      'vigil_d_seconds_count{mode="poll"} 5',
    ]);
    const bare = r.histogram("vigil_e_seconds", "E", [], [1]);
    bare.at().observeSince(1000, 1500);
    expect(lines(r).filter((l) => l.startsWith("vigil_e_seconds"))).toEqual([
      'vigil_e_seconds_bucket{le="1"} 1',
      'vigil_e_seconds_bucket{le="+Inf"} 1',
      "vigil_e_seconds_sum 0.5",
      "vigil_e_seconds_count 1",
    ]);
  });

  test("series cap: past MAX_SERIES_PER_FAMILY every new label set is one _overflow child, and counted", () => {
    const r = new MetricsRegistry();
    const f = r.counter("vigil_z_total", "Z", ["event", "mode"]);
    for (let i = 0; i < MAX_SERIES_PER_FAMILY; i++) f.at(`e${i}`, "poll").inc();
    f.at("one-more", "poll").inc();
    f.at("and-another", "push").inc(2);
    f.at("e0", "poll").inc(); // an existing series still counts as itself
    const out = lines(r);
    expect(out.filter((l) => l.startsWith("vigil_z_total{")).length).toBe(MAX_SERIES_PER_FAMILY + 1);
    expect(out).toContain(`vigil_z_total{event="${OVERFLOW_LABEL}",mode="${OVERFLOW_LABEL}"} 3`);
    expect(out).toContain('vigil_z_total{event="e0",mode="poll"} 2');
    expect(out).toContain("vigil_metrics_series_overflow_total 2");
    expect(out.some((l) => l.includes("one-more"))).toBe(false);
  });

  test("disabled: no children kept, no collectors, increments go nowhere", () => {
    const r = new MetricsRegistry();
    const f = r.counter("vigil_w_total", "W", ["server"]);
    r.collect({ kind: "gauge", name: "vigil_c", help: "C", read: () => [{ labels: {}, value: 1 }] });
    r.disable();
    expect(r.enabled).toBe(false);
    f.at("fx").inc(5);
    const off = r.collect({ kind: "gauge", name: "vigil_c2", help: "C2", read: () => [{ labels: {}, value: 1 }] });
    off();
    const out = renderMetrics(r);
    expect(out).not.toContain("fx");
    expect(out).not.toContain("vigil_c ");
    expect(out).not.toContain("vigil_c2");
  });

  test("collected families: read at render time; replaced by name; removed by the returned function", () => {
    const r = new MetricsRegistry();
    let n = 1;
    const first = r.collect({ kind: "gauge", name: "vigil_open", help: "Open", read: () => [{ labels: { session: 'q"' }, value: n }] });
    expect(lines(r)).toContain('vigil_open{session="q\\""} 1');
    n = 7;
    expect(lines(r)).toContain('vigil_open{session="q\\""} 7');
    const second = r.collect({ kind: "gauge", name: "vigil_open", help: "Open", read: () => [{ labels: {}, value: 2 }] });
    first(); // the replaced one's removal leaves the new one alone
    expect(lines(r)).toContain("vigil_open 2");
    second();
    expect(renderMetrics(r)).not.toContain("vigil_open");
    expect(() => r.collect({ kind: "gauge", name: "vigil_metrics_series_overflow_total", help: "dup", read: () => [] })).toThrow("registered twice");
  });

  test("names and labels are checked at registration; a wrong label count throws", () => {
    const r = new MetricsRegistry();
    expect(() => r.counter("bad-name", "x", [])).toThrow("invalid metric name");
    expect(() => r.counter("vigil_a_total", "x", ["le"])).toThrow("invalid label name");
    expect(() => r.histogram("vigil_b_seconds", "x", ["0bad"])).toThrow("invalid label name");
    const f = r.counter("vigil_c_total", "x", ["a", "b"]);
    expect(() => f.at("only-one")).toThrow("expected 2 label values");
    expect(() => r.counter("vigil_c_total", "again", [])).toThrow("registered twice");
  });

  test("numbers: NaN and infinities as the format spells them", () => {
    expect([NaN, Infinity, -Infinity, 0.25, 3].map(formatNumber)).toEqual(["NaN", "+Inf", "-Inf", "0.25", "3"]);
  });
});
