import { describe, expect, test } from "bun:test";
import { compilePattern, firstMatch } from "../../../src/policy/pattern.ts";

// [pattern, name, matches]
const CASES: [string, string, boolean][] = [
  ["*", "anything", true],
  ["*", "", true],
  ["exec", "exec", true],
  ["exec", "exec2", false],
  ["exec", "my_exec", false],
  ["read_*", "read_file", true],
  ["read_*", "read_", true],
  ["read_*", "xread_file", false],
  ["*_file", "read_file", true],
  ["*_file", "read_files", false],
  ["*delete*", "delete", true],
  ["*delete*", "bulk_delete_rows", true],
  ["*delete*", "dele_te", false],
  ["read_*_file", "read_text_file", true],
  ["read_*_file", "read__file", true],
  ["read_*_file", "read_file", false], // the pieces may not overlap: "read_" and "_file" need 9 chars
  ["read_*_file", "read_text_file_backup", false],
  ["a*b*c", "abc", true],
  ["a*b*c", "aXbYc", true],
  ["a*b*c", "acb", false],
  ["a*a", "a", false],
  ["a*a", "aa", true],
  ["**", "x", true],
  ["a**b", "ab", true],
  ["*ab*ab*", "abab", true],
  ["*ab*ab*", "aba", false],
  // Regex metacharacters are literal: no regex is ever built.
  ["a.b", "a.b", true],
  ["a.b", "axb", false],
  ["(x)", "(x)", true],
  ["(x)", "x", false],
  ["a+", "aaa", false],
  ["a+", "a+", true],
  ["[ab]", "a", false],
  ["^exec$", "exec", false],
  ["^exec$", "^exec$", true],
  ["x|y", "x", false],
  ["a\\*", "a\\anything", true], // a backslash does not escape the star
  ["*.*", "a.b", true],
  ["*.*", "ab", false],
  ["tool?", "tools", false],
  ["multi\nline*", "multi\nline name", true],
  ["*\n*", "a\nb", true],
];

describe("compilePattern", () => {
  for (const [pattern, name, expected] of CASES) {
    test(`${JSON.stringify(pattern)} ${expected ? "matches" : "does not match"} ${JSON.stringify(name)}`, () => {
      expect(compilePattern(pattern).matches(name)).toBe(expected);
    });
  }

  test("keeps its source", () => {
    expect(compilePattern("read_*").source).toBe("read_*");
  });

  test("stays fast on adversarial input (no backtracking blow-up)", () => {
    const pattern = compilePattern(`${"a*".repeat(30)}b`);
    expect(pattern.matches("a".repeat(100_000))).toBe(false);
  });
});

describe("firstMatch", () => {
  test("returns the index of the first matching pattern, or -1", () => {
    const patterns = ["exec", "*delete*", "*"].map(compilePattern);
    expect(firstMatch(patterns, "exec")).toBe(0);
    expect(firstMatch(patterns, "drop_and_delete")).toBe(1);
    expect(firstMatch(patterns, "read")).toBe(2);
    expect(firstMatch(patterns.slice(0, 2), "read")).toBe(-1);
    expect(firstMatch([], "read")).toBe(-1);
  });
});
