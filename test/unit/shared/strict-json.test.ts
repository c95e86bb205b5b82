import { describe, expect, test } from "bun:test";
import { parseStrictJson } from "../../../src/shared/strict-json.ts";

const fault = (input: string | Uint8Array, maxDepth?: number) => {
  const r = parseStrictJson(input, maxDepth === undefined ? {} : { maxDepth });
  return r.ok ? null : r.fault;
};

describe("strict JSON", () => {
  test("accepts what RFC 8259 accepts and materializes it like JSON.parse", () => {
    for (const text of ['{"a":[1,-0.5e-3,true,false,null,"x\\"y\\u00e9"]}', " 1 ", '""', "[]", '{"":{}}']) {
      const r = parseStrictJson(text);
      expect(r).toEqual({ ok: true, value: JSON.parse(text) });
    }
  });

  test.each([
    ['{"a":1,"a":2}', "duplicate_key"],
    ['{"x":{"k":1,"k":1}}', "duplicate_key"],
    ['{"a":1,"\\u0061":2}', "duplicate_key"],
    ['[{"a":1},{"a":1}]', null],
    ['{"n":1e400}', "non_finite_number"],
    ['{"n":-1e400}', "non_finite_number"],
    ['{"a":1,}', "syntax"],
    ["[1,]", "syntax"],
    ["01", "syntax"],
    ["1.", "syntax"],
    ['"\t"', "syntax"],
    ['"\\x"', "syntax"],
    ['"abc', "syntax"],
    ["{}x", "syntax"],
    ["\ufeff{}", "syntax"],
    ["NaN", "syntax"],
  ] as const)("%p → %p", (text, expected) => {
    expect(fault(text)).toBe(expected);
  });

  test("depth is bounded: exactly at the limit passes, one deeper is refused", () => {
    expect(fault("[".repeat(32) + "]".repeat(32))).toBeNull();
    expect(fault("[".repeat(33) + "]".repeat(33))).toBe("too_deep");
    expect(fault('{"a":'.repeat(33) + "1" + "}".repeat(33))).toBe("too_deep");
  });

  test("a hostile depth bomb gets a typed refusal, not a stack overflow", () => {
    expect(fault("[".repeat(1_000_000))).toBe("too_deep");
    expect(fault("[".repeat(100_000) + "]".repeat(100_000), 200_000)).toBeNull();
  });

  test("invalid UTF-8 is refused, not replaced", () => {
    expect(fault(new Uint8Array([0x22, 0xff, 0x22]))).toBe("invalid_utf8");
    expect(fault(new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22]))).toBe("invalid_utf8"); // encoded surrogate
    expect(fault(Buffer.from('"é"'))).toBeNull();
  });

  test("long strings, many keys and wide arrays within bounds are fine", () => {
    const many = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]));
    expect(fault(JSON.stringify(many))).toBeNull();
    expect(fault(JSON.stringify({ s: "x".repeat(5_000_000) }))).toBeNull();
    expect(fault(JSON.stringify({ s: '\\"'.repeat(100_000) }))).toBeNull();
  });

  test("failures carry a message with the offset", () => {
    const r = parseStrictJson('{"a":1,"a":2}');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain("offset 7");
  });
});
