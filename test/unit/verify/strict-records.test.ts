/** Strict materialization of records and NDJSON splitting (verify.md "Inputs and bounds"). */
import { describe, expect, test } from "bun:test";
import { BOUNDS } from "../../../src/verify/capture-input.ts";
import { RECORD_MAX_DEPTH, parseRecord, splitNdjson } from "../../../src/verify/strict-records.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const codeOf = (s: string | Uint8Array) => {
  const r = parseRecord(typeof s === "string" ? enc(s) : s, "f");
  return r.ok ? "ok" : r.finding.code;
};

describe("bounds are the documented ones", () => {
  test("64 KiB companions, 8 MiB and 10,000 decision lines, 8 MiB and 100,000 receipt lines, depth 32", () => {
    expect(BOUNDS.companionBytes).toBe(64 * 1024);
    expect(BOUNDS.decisionBytes).toBe(8 * 1024 * 1024);
    expect(BOUNDS.decisionLines).toBe(10_000);
    expect(BOUNDS.receiptBytes).toBe(8 * 1024 * 1024);
    expect(BOUNDS.receiptLines).toBe(100_000);
    expect(RECORD_MAX_DEPTH).toBe(32);
  });
});

describe("parseRecord", () => {
  test("typed refusals", () => {
    expect(codeOf('{"a":1}')).toBe("ok");
    expect(codeOf('{"a":1,"a":2}')).toBe("duplicate_key");
    expect(codeOf('{"a":{"b":1,"\\u0062":2}}')).toBe("duplicate_key");
    expect(codeOf('{"a":1e400}')).toBe("non_finite_number");
    expect(codeOf('{"a":-1e400}')).toBe("non_finite_number");
    expect(codeOf('{"a":1e308}')).toBe("ok");
    expect(codeOf(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))).toBe("invalid_utf8");
    expect(codeOf('{"a":')).toBe("invalid_json");
    expect(codeOf("")).toBe("invalid_json");
    expect(codeOf('{"a":1}{"b":2}')).toBe("invalid_json");
  });

  test("depth 32 parses, 33 is too_deep, 1,000,000 is too_deep without a stack overflow", () => {
    expect(codeOf(nested(32))).toBe("ok");
    expect(codeOf(nested(33))).toBe("too_deep");
    expect(codeOf(nested(1_000_000))).toBe("too_deep");
  });

  test("the finding names the file and the place", () => {
    const r = parseRecord(enc('{"a":1,"a":2}'), "session-stop.json", "line 3: ");
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.finding.file).toBe("session-stop.json");
      expect(r.finding.message).toMatch(/^line 3: duplicate key/);
      expect(r.finding.effect).toBe("unknown");
    }
  });
});

describe("splitNdjson", () => {
  test("complete lines, their bytes (newlines included), and the tail", () => {
    const s = splitNdjson(enc("a\nbb\nccc"), 10)!;
    expect(s.lines.map((l) => Buffer.from(l).toString())).toEqual(["a", "bb"]);
    expect(Buffer.from(s.completeBytes).toString()).toBe("a\nbb\n");
    expect(Buffer.from(s.tail).toString()).toBe("ccc");
  });

  test("empty input: no lines, no tail", () => {
    const s = splitNdjson(enc(""), 10)!;
    expect(s.lines).toHaveLength(0);
    expect(s.tail).toHaveLength(0);
  });

  test("exactly maxLines complete lines pass; one more is refused", () => {
    expect(splitNdjson(enc("{}\n".repeat(5)), 5)!.lines).toHaveLength(5);
    expect(splitNdjson(enc("{}\n".repeat(6)), 5)).toBeNull();
  });

  test("maxLines complete lines plus a tail pass (the tail is not a line)", () => {
    const s = splitNdjson(enc(`${"{}\n".repeat(5)}{`), 5)!;
    expect(s.lines).toHaveLength(5);
    expect(Buffer.from(s.tail).toString()).toBe("{");
  });
});
