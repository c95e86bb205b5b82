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

describe("parseRecord: the fast path (JSON.parse + key count + depth scan) refuses what the scanner refuses", () => {
  const cases: [string, string][] = [
    ['{"__proto__":1,"__proto__":2}', "duplicate_key"],
    ['[{"a":1},{"a":1,"a":2}]', "duplicate_key"],
    ['{"a":"x\\":y","a":1}', "duplicate_key"],
    ['{"a" : 1, "a"\n:2}', "duplicate_key"],
    ['{"k":"\\\\","k":1}', "duplicate_key"],
    ['{"\\u0061":1,"a":2}', "duplicate_key"],
    ['{"":1,"":2}', "duplicate_key"],
    ['{"1":1,"1":2}', "duplicate_key"],
    ['{"a":{"b":{"c":1,"c":1}}}', "duplicate_key"],
    ["[1e400]", "non_finite_number"],
    ['[{"a":[-1e400]}]', "non_finite_number"],
    [`[${"9".repeat(400)}]`, "non_finite_number"],
    ['{"a":1} x', "invalid_json"],
    ['{"a":"unterminated}', "invalid_json"],
    ['{"a":1,}', "invalid_json"],
    ['{"a":"\u0001"}', "invalid_json"],
  ];
  for (const [text, code] of cases) {
    test(`${JSON.stringify(text).slice(0, 60)} → ${code}`, () => expect(codeOf(text)).toBe(code));
  }

  const fine = [
    '{"__proto__":{"a":1},"b":2}',
    '{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',
    '["]\\"[",{"x":"}"},"\\\\"]',
    '{"a\\\\":1,"a":2}',
    '{"a":1e308,"b":-0,"c":1e-400}',
    `${"[".repeat(16)}${"{\"k\":".repeat(16)}1${"}".repeat(16)}${"]".repeat(16)}`,
  ];
  for (const text of fine) {
    test(`${JSON.stringify(text).slice(0, 60)} → accepted, same value as JSON.parse`, () => {
      const r = parseRecord(enc(text), "f");
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.value).toEqual(JSON.parse(text));
    });
  }

  test("an own __proto__ member stays data, not a prototype", () => {
    const r = parseRecord(enc('{"__proto__":{"polluted":true}}'), "f");
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(Object.hasOwn(r.value as object, "__proto__")).toBe(true);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    }
  });

  test("a string argument (already decoded) is handled like bytes", () => {
    expect(parseRecord('{"a":1,"a":2}', "f").ok).toBe(false);
    expect(parseRecord('{"a":1}', "f")).toEqual({ ok: true, value: { a: 1 } });
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
