import { describe, expect, test } from "bun:test";
import { NdjsonCommandReader, encodeFrame } from "../../../src/serve/protocol/ndjson.ts";
import { errorResponse, messageFrame } from "../../../src/serve/protocol/frames.ts";

const enc = (s: string) => new TextEncoder().encode(s);

describe("NdjsonCommandReader", () => {
  test("a command split across chunk boundaries", () => {
    const r = new NdjsonCommandReader();
    const line = '{"type":"prompt","id":"p1","message":"héllo"}\n';
    const bytes = enc(line);
    const out = [];
    for (let i = 0; i < bytes.length; i += 3) out.push(...r.push(bytes.subarray(i, i + 3)));
    expect(out).toEqual([{ ok: true, command: { type: "prompt", id: "p1", message: "héllo" } }]);
    expect(r.buffered).toBe(0);
  });

  test("several commands in one chunk; blank lines and CRLF are skipped", () => {
    const r = new NdjsonCommandReader();
    const out = r.push('\n  \n{"type":"abort","id":1}\r\n\r\n{"type":"get_state","id":2}\n');
    expect(out.map((x) => x.ok && x.command)).toEqual([{ type: "abort", id: 1 }, { type: "get_state", id: 2 }]);
  });

  test("a bad line yields its response and the reader carries on", () => {
    const r = new NdjsonCommandReader();
    const out = r.push('{"type":"abort"\n{"type":"abort","id":"b"}\n');
    expect(out[0]).toMatchObject({ ok: false, response: { error: { code: "invalid_json" } } });
    expect(out[1]).toEqual({ ok: true, command: { type: "abort", id: "b" } });
  });

  test("an over-long line is refused once its newline arrives, unbuffered; the next line is fine", () => {
    const r = new NdjsonCommandReader({ maxLineBytes: 1024 });
    expect(r.push('{"type":"prompt","id":"long","message":"')).toEqual([]);
    for (let i = 0; i < 50; i++) {
      expect(r.push("x".repeat(1000))).toEqual([]);
      expect(r.buffered).toBeLessThanOrEqual(8192);
    }
    const out = r.push('"}\n{"type":"abort","id":"next"}\n');
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ ok: false, response: { id: "long", command: "prompt", error: { code: "too_large" } } });
    expect(out[0]!.ok === false && out[0]!.response.error.message).not.toContain("xxx");
    expect(out[1]).toEqual({ ok: true, command: { type: "abort", id: "next" } });
  });

  test("the default cap is 1 MiB per line", () => {
    const r = new NdjsonCommandReader();
    const message = "m".repeat(1024 * 1024);
    const out = r.push(`{"type":"prompt","id":9,"message":"${message}"}\n`);
    expect(out[0]).toMatchObject({ ok: false, response: { id: 9, error: { code: "too_large" } } });
  });

  test("an unterminated last line counts at end()", () => {
    const r = new NdjsonCommandReader();
    expect(r.push('{"type":"abort","id":3}')).toEqual([]);
    expect(r.end()).toEqual([{ ok: true, command: { type: "abort", id: 3 } }]);
    expect(r.end()).toEqual([]);
  });
});

describe("encodeFrame", () => {
  test("one JSON line, newline-terminated, even with newlines in text", () => {
    const line = encodeFrame({ ...messageFrame("assistant", "a\nb\u2028c"), seq: 4 });
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toContain("\n");
    expect(JSON.parse(line)).toEqual({ type: "message", role: "assistant", text: "a\nb\u2028c", seq: 4 });
    expect(encodeFrame(errorResponse(null, null, "invalid_json", "x"))).toBe(
      '{"type":"response","id":null,"command":null,"success":false,"error":{"code":"invalid_json","message":"x"}}\n',
    );
  });
});
