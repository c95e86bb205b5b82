// Bounds on server text that reaches frames (src/events/rules/server-text.ts; issue 11): each string
// cut once to 1,024 characters and "…", error data bounded as a whole, with bounded work.
import { describe, expect, test } from "bun:test";
import { SERVER_TEXT_LIMITS, boundText, boundValue } from "../../../src/events/rules/server-text.ts";

const L = SERVER_TEXT_LIMITS;

describe("boundText", () => {
  test("short text is unchanged; long text is cut to 1,024 characters and an ellipsis", () => {
    expect(boundText("revoked")).toBe("revoked");
    expect(boundText("x".repeat(1024))).toBe("x".repeat(1024));
    expect(boundText("x".repeat(5_000_000))).toBe(`${"x".repeat(1024)}…`);
  });

  test("a cut never leaves half a surrogate pair", () => {
    const text = `${"x".repeat(1023)}😀tail`;
    const cut = boundText(text);
    expect(cut).toBe(`${"x".repeat(1023)}…`);
    expect(cut.isWellFormed()).toBe(true);
  });
});

describe("boundValue", () => {
  test("every string, keys included, is cut; numbers and structure are kept", () => {
    const long = "y".repeat(3000);
    expect(boundValue({ reason: long, code: 7, list: [long, null, true], [long]: 1 })).toEqual({
      reason: `${"y".repeat(1024)}…`,
      code: 7,
      list: [`${"y".repeat(1024)}…`, null, true],
      [`${"y".repeat(1024)}…`]: 1,
    });
    expect(boundValue(undefined)).toBeUndefined();
    expect(boundValue("z".repeat(2000))).toBe(`${"z".repeat(1024)}…`);
  });

  test("data still too large as JSON, too many values or too deep is replaced by a note", () => {
    const wide = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, "v".repeat(1000)]));
    expect(String(boundValue(wide))).toContain(`at most ${L.dataJsonChars} are kept`);
    expect(String(boundValue(new Array(1_000_000).fill(1)))).toBe(`(more than ${L.nodes} values, left out)`);
    const deep = JSON.parse(`${'{"a":'.repeat(100)}1${"}".repeat(100)}`);
    expect(JSON.stringify(boundValue(deep))).toContain("(nested deeper than 32 levels)");
  });

  test("a __proto__ key stays a plain member", () => {
    const out = boundValue(JSON.parse('{"__proto__":{"polluted":true}}')) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
