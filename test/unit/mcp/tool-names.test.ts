import { describe, expect, test } from "bun:test";
import {
  isValidFunctionName,
  qualifiedToolName,
  splitQualifiedName,
  toolNameProblem,
} from "../../../src/mcp/tool-names.ts";

describe("qualifiedToolName", () => {
  test("joins server and tool with __", () => {
    expect(qualifiedToolName("fs", "read_file")).toBe("fs__read_file");
    expect(qualifiedToolName("a-b", "x__y")).toBe("a-b__x__y");
  });
});

describe("splitQualifiedName", () => {
  const servers = ["fs", "tickets", "a_b"];

  test("splits at the first __ and keeps __ inside the tool name", () => {
    expect(splitQualifiedName("fs__read_file", servers)).toEqual({ server: "fs", tool: "read_file" });
    expect(splitQualifiedName("tickets__x__y", servers)).toEqual({ server: "tickets", tool: "x__y" });
    expect(splitQualifiedName("a_b__c", servers)).toEqual({ server: "a_b", tool: "c" });
  });

  test("round-trips qualifiedToolName", () => {
    for (const [s, t] of [["fs", "a"], ["tickets", "__lead"], ["a_b", "tail__"]] as const) {
      expect(splitQualifiedName(qualifiedToolName(s, t), servers)).toEqual({ server: s, tool: t });
    }
  });

  test("null for an unknown server, no separator, or an empty part", () => {
    expect(splitQualifiedName("other__read", servers)).toBeNull();
    expect(splitQualifiedName("fsread", servers)).toBeNull();
    expect(splitQualifiedName("fs__", servers)).toBeNull();
    expect(splitQualifiedName("__fs", servers)).toBeNull();
    expect(splitQualifiedName("", servers)).toBeNull();
    expect(splitQualifiedName("fs__x", [])).toBeNull();
  });

  test("accepts any iterable of server names", () => {
    expect(splitQualifiedName("fs__x", new Set(["fs"]).keys())).toEqual({ server: "fs", tool: "x" });
  });
});

describe("function name validity", () => {
  test("the OpenAI pattern", () => {
    expect(isValidFunctionName("fs__read_file")).toBe(true);
    expect(isValidFunctionName("a-b__C9")).toBe(true);
    expect(isValidFunctionName("x".repeat(64))).toBe(true);
    expect(isValidFunctionName("x".repeat(65))).toBe(false);
    expect(isValidFunctionName("fs__read file")).toBe(false);
    expect(isValidFunctionName("fs__read.file")).toBe(false);
    expect(isValidFunctionName("fs__lire_fiché")).toBe(false);
    expect(isValidFunctionName("")).toBe(false);
  });

  test("toolNameProblem is null for a fitting name and explains the others in one line", () => {
    expect(toolNameProblem("fs", "read_file")).toBeNull();
    const long = toolNameProblem("fs", "t".repeat(70));
    expect(long).toContain("at most 64");
    expect(long).not.toContain("\n");
    const chars = toolNameProblem("fs", "delete file");
    expect(chars).toContain('"delete file"');
    expect(chars).toContain("only A-Z");
    expect(toolNameProblem("fs", "")).toContain("empty name");
    expect(toolNameProblem("fs", "bad\nname")).not.toContain("\n");
  });

  test("a long hostile name is bounded in the reason", () => {
    const reason = toolNameProblem("fs", "é".repeat(10_000))!;
    expect(reason.length).toBeLessThan(300);
  });
});
