import { describe, expect, test } from "bun:test";
import { contextBudget } from "../../../src/serve/context/budget.ts";
import { toolsTokens } from "../../../src/serve/context/estimate.ts";
import { DESCRIPTION_FLOOR_BYTES, fitTools } from "../../../src/serve/context/tool-fit.ts";
import type { ToolSpec } from "../../../src/serve/models/types.ts";
import { offerReport } from "../../../src/serve/run/tool-offer.ts";

const schema = (props = 1) => ({
  type: "object",
  properties: Object.fromEntries(Array.from({ length: props }, (_, i) => [`p${i}`, { type: "string" }])),
});
const tool = (name: string, descriptionBytes: number, props = 1): ToolSpec => ({
  name,
  ...(descriptionBytes === 0 ? {} : { description: "d".repeat(descriptionBytes) }),
  parameters: schema(props),
});
const CUT = /…\[vigil: \d+ bytes cut\]$/;

describe("fitTools", () => {
  test("the tool schemas get 25 % of the window", () => {
    expect(contextBudget(32_000).toolsMax).toBe(8_000);
    expect(contextBudget(10_000).toolsMax).toBe(2_500);
  });

  test("tools within their budget are offered as listed", () => {
    const specs = [tool("a", 100), tool("b", 0)];
    const fit = fitTools(specs, 10_000);
    expect(fit.offered).toEqual(specs);
    expect(fit.shortened).toEqual([]);
    expect(fit.omitted).toEqual([]);
    expect(fit.offeredTokens).toBe(toolsTokens(specs));
  });

  test("over the budget, long descriptions are cut to a common length with a marker; short ones stay whole", () => {
    const specs = [tool("short", 50), tool("long1", 20_000), tool("long2", 8_000)];
    const fit = fitTools(specs, 2_000);
    expect(fit.omitted).toEqual([]);
    expect(fit.shortened).toEqual(["long1", "long2"]);
    expect(fit.offered.map((s) => s.name)).toEqual(["short", "long1", "long2"]);
    expect(fit.offered[0]).toEqual(specs[0]!);
    const [, a, b] = fit.offered;
    expect(a!.description).toMatch(CUT);
    expect(b!.description).toMatch(CUT);
    // Cut to the same length (the markers differ by the digits of what was cut).
    expect(Math.abs(a!.description!.length - b!.description!.length)).toBeLessThanOrEqual(2);
    expect(a!.description!.length).toBeGreaterThan(DESCRIPTION_FLOOR_BYTES);
    expect(a!.parameters).toEqual(specs[1]!.parameters);
    expect(fit.offeredTokens).toBeLessThanOrEqual(2_000);
    expect(toolsTokens(fit.offered)).toBe(fit.offeredTokens);
  });

  test("when even the shortest descriptions do not fit, the later tools are left out, in the order listed", () => {
    const specs = Array.from({ length: 40 }, (_, i) => tool(`t${String(i).padStart(2, "0")}`, 4_096));
    const fit = fitTools(specs, 2_000);
    expect(fit.omitted.length).toBeGreaterThan(0);
    const kept = fit.offered.map((s) => s.name);
    // A prefix of the listing is kept; everything after it is left out.
    expect(kept).toEqual(specs.slice(0, kept.length).map((s) => s.name));
    expect(fit.omitted.map((o) => o.name)).toEqual(specs.slice(kept.length).map((s) => s.name));
    for (const s of fit.offered) expect(s.description).toMatch(CUT);
    expect(fit.offeredTokens).toBeLessThanOrEqual(2_000);
  });

  test("a tool whose schema alone is too large is left out, and a later small one is still offered", () => {
    const specs = [tool("small1", 10), tool("huge", 0, 2_000), tool("small2", 10)];
    const fit = fitTools(specs, 1_000);
    expect(fit.offered.map((s) => s.name)).toEqual(["small1", "small2"]);
    expect(fit.omitted).toEqual([{ name: "huge", tokens: expect.any(Number) }]);
    expect(fit.omitted[0]!.tokens).toBeGreaterThan(1_000);
    expect(fit.offered).toEqual([specs[0]!, specs[2]!]);
  });

  test("deterministic, and never over the budget whatever the tools", () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    for (let round = 0; round < 200; round++) {
      const specs = Array.from({ length: 1 + rand(30) }, (_, i) => ({
        name: `s${i}`,
        ...(rand(4) === 0 ? {} : { description: "é\"\n".repeat(rand(3_000)) }),
        parameters: schema(1 + rand(60)),
      }));
      const max = 50 + rand(5_000);
      const fit = fitTools(specs, max);
      expect(toolsTokens(fit.offered)).toBeLessThanOrEqual(max);
      expect(fit.offered.length + fit.omitted.length).toBe(specs.length);
      expect(fitTools(specs, max)).toEqual(fit);
    }
  });

  test("a budget too small for any tool offers none", () => {
    const fit = fitTools([tool("a", 100), tool("b", 100)], 10);
    expect(fit.offered).toEqual([]);
    expect(fit.omitted.map((o) => o.name)).toEqual(["a", "b"]);
  });
});

describe("offerReport", () => {
  test("names what was shortened and left out, and its key changes only with them", () => {
    const specs = Array.from({ length: 30 }, (_, i) => tool(`t${i}`, 4_096));
    const fit = fitTools(specs, 2_000);
    const report = offerReport(fit, 2_000);
    expect(report.text).toContain("over their budget of 2000");
    expect(report.text).toContain('descriptions shortened: "t0"');
    expect(report.text).toMatch(/left out, their schemas do not fit what is left \(they cannot be called\): "t\d+" \(\d+ tokens\)/);
    expect(offerReport(fitTools(specs, 2_000), 2_000).key).toBe(report.key);
    expect(offerReport(fitTools(specs.slice(0, 29), 2_000), 2_000).key).not.toBe(report.key);
    expect(offerReport(fitTools(specs.slice(0, 1), 2_000), 2_000).key).toBe("fits");
  });

  test("a long list is bounded in the line", () => {
    const fit = fitTools(Array.from({ length: 200 }, (_, i) => tool(`t${i}`, 4_096)), 500);
    expect(offerReport(fit, 500).text).toMatch(/and \d+ more/);
    expect(offerReport(fit, 500).text.length).toBeLessThan(4_000);
  });
});
