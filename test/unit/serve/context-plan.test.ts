/** The context decisions (issue 12 item A), pure: compaction plans, caps, cuts, the history fold. */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { ServeConfigSchema } from "../../../src/serve/config/schema.ts";
import { applyCompaction, summaryMessage } from "../../../src/serve/context/blocks.ts";
import { contextBudget } from "../../../src/serve/context/budget.ts";
import { cutText } from "../../../src/serve/context/compact.ts";
import { textBytes } from "../../../src/serve/context/estimate.ts";
import { capsWithin, omittedNotice, planCompaction, sum } from "../../../src/serve/context/plan.ts";
import { HistoryFold } from "../../../src/serve/session/history.ts";
import type { TranscriptRecord } from "../../../src/serve/state/transcript.ts";

const budget = contextBudget(10_000); // trigger 7500, target 5000, summary 1000

describe("planCompaction", () => {
  test("within the trigger: nothing to do", () => {
    expect(planCompaction({ budget, fixed: 500, units: [1000, 2000, 3000], tail: 1000 })).toEqual({ kind: "fits" });
    expect(planCompaction({ budget, fixed: 0, units: [], tail: 7500 })).toEqual({ kind: "fits" });
  });

  test("over it: the oldest units go, the recent ones that fit the target beside a summary stay", () => {
    // room = 5000 - 500 - 1000 - 1000 = 2500: the last unit (2000) stays, 3000 + 2000 would not.
    expect(planCompaction({ budget, fixed: 500, units: [3000, 3000, 2000], tail: 1000 })).toEqual({ kind: "compact", replace: 2 });
  });

  test("at least one unit is replaced, and all of them when even the newest does not fit", () => {
    expect(planCompaction({ budget, fixed: 0, units: [8000], tail: 0 })).toEqual({ kind: "compact", replace: 1 });
    expect(planCompaction({ budget, fixed: 0, units: [1, 1, 1], tail: 9000 })).toEqual({ kind: "compact", replace: 3 });
  });

  test("over, with nothing to summarize: only cutting helps", () => {
    expect(planCompaction({ budget, fixed: 100, units: [], tail: 9000 })).toEqual({ kind: "over" });
  });
});

describe("capsWithin", () => {
  test("everything fits: unchanged", () => {
    expect(capsWithin([3, 4, 5], 12)).toEqual([3, 4, 5]);
  });

  test("short items stay whole; the long ones share what is left equally", () => {
    const caps = capsWithin([10, 1000, 500, 20], 330);
    expect(caps).toEqual([10, 150, 150, 20]);
    expect(sum(caps)).toBeLessThanOrEqual(330);
  });

  test("no room: everything is cut to nothing", () => {
    expect(capsWithin([5, 6], 0)).toEqual([0, 0]);
  });
});

describe("cutText", () => {
  test("a text over its cap is cut, marked, and within the cap on the wire", () => {
    const text = `${"\"quoted\" ".repeat(2000)}end`;
    const cut = cutText(text, textBytes(text), 1000);
    expect(textBytes(cut)).toBeLessThanOrEqual(1000);
    expect(cut).toMatch(/…\[vigil: \d+ bytes cut\]$/);
    expect(text.startsWith(cut.slice(0, cut.indexOf("…[vigil")))).toBe(true);
  });

  test("never splits a surrogate pair", () => {
    const text = "😀".repeat(500);
    const cut = cutText(text, textBytes(text), 301);
    expect(cut.slice(0, cut.indexOf("…[vigil"))).toMatch(/^(😀)*$/u);
  });

  test("a text within its cap is unchanged", () => {
    expect(cutText("short", textBytes("short"), 100)).toBe("short");
  });
});

describe("the trim notice and compaction of blocks", () => {
  test("says how many messages were left out", () => {
    expect(omittedNotice(1)).toBe("[vigil: 1 earlier message omitted to fit the model's context]");
    expect(omittedNotice(7)).toContain("7 earlier messages omitted");
  });

  test("applyCompaction keeps the blocks after the range, behind the summary", () => {
    const blocks = [
      { fromSeq: 2, toSeq: 6, messages: [{ role: "user" as const, text: "a" }] },
      { fromSeq: 7, toSeq: 11, messages: [{ role: "user" as const, text: "b" }] },
      { fromSeq: 12, toSeq: 16, messages: [{ role: "user" as const, text: "c" }] },
    ];
    const after = applyCompaction(blocks, { summary: "S", from_seq: 2, to_seq: 11 });
    expect(after.map((b) => b.messages[0]!.text)).toEqual([summaryMessage("S").text, "c"]);
    expect(after[0]).toMatchObject({ fromSeq: 2, toSeq: 11, summary: true });
  });
});

describe("HistoryFold (the rebuild after a restart)", () => {
  let seq = 0;
  const rec = (frame: Record<string, unknown>) => ({ ...frame, seq: ++seq, time: "t" }) as TranscriptRecord;
  const run = (id: string, status: string | null, ...texts: [string, string][]) => [
    rec({ type: "run_start", run_id: id, trigger: "mcp_events" }),
    ...texts.map(([role, text]) => rec({ type: "message", role, text })),
    ...(status === null ? [] : [rec({ type: "run_end", run_id: id, status })]),
  ];

  test("only runs that ended ok are rebuilt: failed, aborted and unfinished runs add nothing", () => {
    const fold = HistoryFold.after(null);
    const records = [
      ...run("r1", "ok", ["user", "batch 1"], ["assistant", "seen 1"]),
      ...run("r2", "failed", ["user", "batch 2"]),
      rec({ type: "mcp_event", event: {} }),
      ...run("r3", "aborted", ["user", "batch 2"], ["user", "steer"]),
      ...run("r4", "ok", ["user", "batch 2"], ["assistant", "seen 2"]),
      ...run("r5", null, ["user", "batch 3"]),
    ];
    for (const r of records) fold.add(r);
    expect(fold.blocks.flatMap((b) => b.messages.map((m) => m.text))).toEqual(["batch 1", "seen 1", "batch 2", "seen 2"]);
    expect(fold.blocks[0]!.fromSeq).toBe(records[0]!.seq);
  });

  test("a compaction's summary comes first", () => {
    const fold = HistoryFold.after({ type: "compaction", summary: "earlier", from_seq: 1, to_seq: 10, seq: 20, time: "t" });
    for (const r of run("r6", "ok", ["user", "later"])) fold.add(r);
    expect(fold.blocks.map((b) => b.messages[0]!.text)).toEqual([summaryMessage("earlier").text, "later"]);
  });

  test("a compaction met on the way applies only when it reaches further than the summary in hand", () => {
    const fold = HistoryFold.after(null);
    const first = run("r7", "ok", ["user", "one"], ["assistant", "a1"]);
    const second = run("r8", "ok", ["user", "two"], ["assistant", "a2"]);
    for (const r of [...first, ...second]) fold.add(r);
    const older = rec({ type: "compaction", summary: "S1", from_seq: first[0]!.seq, to_seq: first.at(-1)!.seq });
    fold.add(older);
    expect(fold.messages().map((m) => m.text)).toEqual([summaryMessage("S1").text, "two", "a2"]);
    // The same range again, or one that ends earlier (an older record met while rebuilding): nothing changes.
    fold.add(rec({ type: "compaction", summary: "S0", from_seq: first[0]!.seq, to_seq: first[1]!.seq }));
    fold.add(rec({ ...older, seq: undefined, time: undefined }));
    expect(fold.messages().map((m) => m.text)).toEqual([summaryMessage("S1").text, "two", "a2"]);
    fold.add(rec({ type: "compaction", summary: "S2", from_seq: first[0]!.seq, to_seq: second.at(-1)!.seq }));
    expect(fold.messages().map((m) => m.text)).toEqual([summaryMessage("S2").text]);
  });

  test("a malformed compaction record is ignored", () => {
    expect(HistoryFold.after({ type: "compaction", summary: 3, from_seq: 1, to_seq: 10, seq: 20, time: "t" }).blocks).toEqual([]);
    expect(HistoryFold.after({ type: "compaction", summary: "s", from_seq: 1, to_seq: 30, seq: 20, time: "t" }).blocks).toEqual([]);
  });
});

describe("model.context_tokens", () => {
  const parse = (model: Record<string, unknown>) => v.safeParse(ServeConfigSchema, { model });
  const openai = { provider: "openai", base_url: "http://127.0.0.1:1/v1", model: "m" };

  test("optional for either provider; the budget's default is 32,000", () => {
    expect(parse(openai).success).toBe(true);
    expect(parse({ ...openai, context_tokens: 128_000 }).output).toMatchObject({ model: { context_tokens: 128_000 } });
    expect(parse({ provider: "command", command: ["x"], context_tokens: 8000 }).success).toBe(true);
    expect(contextBudget(undefined).window).toBe(32_000);
  });

  test("bounded: a window too small to hold a summary and a batch is refused", () => {
    for (const bad of [1999, 10_000_001, 1.5, "32000"]) {
      const r = parse({ ...openai, context_tokens: bad });
      expect(r.success).toBe(false);
      expect(r.issues?.[0]?.message).toBe("expected an integer from 2000 to 10000000");
    }
  });
});
