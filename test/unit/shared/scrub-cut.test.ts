/**
 * Text is scrubbed before it is cut (issue 11 item 1): a secret straddling the cut leaves no
 * prefix; text from after the cut does not slide in when an earlier secret shrinks; a window that
 * ends inside a secret begun before the cut shows none of it. Then the two cutters that use it: a
 * stdio MCP server's stderr line (4 KiB) and a command model's unterminated stderr line.
 */
import { describe, expect, test } from "bun:test";
import { STDERR_LINE_MAX_BYTES, STDERR_SCRUB_WINDOW_BYTES, stderrLineText } from "../../../src/mcp/stdio-stderr.ts";
import { forwardStderr } from "../../../src/serve/models/command-pipes.ts";
import { LineSplitter } from "../../../src/shared/ndjson/line-splitter.ts";
import { REDACTED, Scrubber, registerSecrets } from "../../../src/shared/scrub.ts";

const SECRET = "zq7-SECRET-straddle-3f9b1c";
const PREFIX = SECRET.slice(0, 6);
const SUFFIX = SECRET.slice(-6);

describe("Scrubber.cut", () => {
  const s = new Scrubber([SECRET]);

  test("short text is only scrubbed", () => {
    expect(s.cut(`a ${SECRET} b`, 100)).toEqual({ text: `a ${REDACTED} b`, cut: false });
  });

  test("a secret straddling the cut is replaced whole", () => {
    for (let before = 1; before < SECRET.length; before++) {
      const text = `${"a".repeat(100 - before)}${SECRET}${"b".repeat(100)}`;
      const out = s.cut(text, 100);
      expect(out).toEqual({ text: `${"a".repeat(100 - before)}${REDACTED}`, cut: true });
    }
  });

  test("text after the cut does not slide in when an earlier secret shrinks", () => {
    // Two secrets before the cut, and one that starts just past it: none of the third may show.
    const text = `${SECRET}${SECRET}${"a".repeat(40)}${SECRET}tail`;
    const out = s.cut(text, SECRET.length * 2 + 41);
    expect(out.text).toBe(`${REDACTED}${REDACTED}${"a".repeat(40)}${REDACTED}`);
    const past = s.cut(`${SECRET}${"a".repeat(10)}${SECRET}`, SECRET.length + 10);
    expect(past.text).toBe(`${REDACTED}${"a".repeat(10)}`);
  });

  test("a window that ends inside a secret begun before the cut shows none of it", () => {
    const text = `${"a".repeat(95)}${SECRET.slice(0, 10)}`; // the window stops 10 characters into the secret
    expect(s.cut(text, 100)).toEqual({ text: `${"a".repeat(95)}${REDACTED}`, cut: true });
  });

  test("without secrets it is a plain cut", () => {
    expect(new Scrubber([]).cut("abcdef", 3)).toEqual({ text: "abc", cut: true });
  });
});

describe("a stdio MCP server's stderr line", () => {
  registerSecrets([SECRET]);
  const lineOf = (text: string) => {
    const splitter = new LineSplitter(STDERR_SCRUB_WINDOW_BYTES, Number.POSITIVE_INFINITY, STDERR_SCRUB_WINDOW_BYTES);
    const [frame] = [...splitter.push(new TextEncoder().encode(`${text}\n`)), ...splitter.end()];
    return stderrLineText(frame!)!;
  };

  test("a secret across the 4 KiB cut leaves no prefix, in a line longer or much longer than the window", () => {
    for (const after of [10, 100_000]) {
      const line = lineOf(`${"a".repeat(STDERR_LINE_MAX_BYTES - 8)}${SECRET}${"b".repeat(after)}`);
      expect(line).not.toContain(PREFIX);
      expect(line).toStartWith(`${"a".repeat(STDERR_LINE_MAX_BYTES - 8)}${REDACTED}…`);
      expect(line).toEndWith(`(line of ${STDERR_LINE_MAX_BYTES - 8 + SECRET.length + after} bytes cut)`);
    }
  });

  test("the cut falls on a character boundary", () => {
    const line = lineOf(`${"a".repeat(STDERR_LINE_MAX_BYTES - 1)}€${"b".repeat(100)}`);
    expect(line).toStartWith(`${"a".repeat(STDERR_LINE_MAX_BYTES - 1)}…`);
  });
});

describe("a command model's stderr", () => {
  registerSecrets([SECRET]);
  const forward = async (chunks: string[]) => {
    const lines: string[] = [];
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk));
        c.close();
      },
    });
    const last = await forwardStderr(stream, (l) => lines.push(l));
    return { lines, last };
  };

  test("an unterminated line cut at its window never forwards the rest, which may begin inside a secret", async () => {
    const { lines, last } = await forward([`${"a".repeat(3995)}${SECRET.slice(0, 10)}`, `${SECRET.slice(10)} more\nnext line\n`]);
    expect(lines).toEqual([`model command: ${"a".repeat(1000)}…`, "model command: next line"]);
    expect(lines.join("\n")).not.toContain(SUFFIX);
    expect(last).toBe("next line");
  });

  test("a secret across the 1000-character cut of a line is replaced whole", async () => {
    const { lines } = await forward([`${"a".repeat(995)}${SECRET}${"b".repeat(50)}\n`]);
    expect(lines).toEqual([`model command: ${"a".repeat(995)}${REDACTED}…`]);
  });
});
