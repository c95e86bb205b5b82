// The server-line walk reads keys and the id as a client's JSON parser does (issue 11 item 1).
import { expect, test } from "bun:test";
import { SERVER_MAX_DEPTH, scanServerFrame } from "../../../src/wrap/server-frames.ts";

const scan = (s: string) => scanServerFrame(Buffer.from(s));

/** Every way of cutting the line into two and three pieces gives the same answer as the whole. */
function expectSameInPieces(line: string): void {
  const whole = scan(line);
  const b = Buffer.from(line);
  for (let i = 0; i <= b.length; i++) {
    expect(scanServerFrame([b.subarray(0, i), b.subarray(i)])).toEqual(whole);
    const j = Math.min(b.length, i + 3);
    expect(scanServerFrame([b.subarray(0, i), b.subarray(i, j), b.subarray(j)])).toEqual(whole);
  }
}

test("escaped keys are the keys they decode to", () => {
  expect(scan('{"jsonrpc":"2.0","\\u0069d":7,"result":{}}')).toEqual({ kind: "response", outcome: "result", idKey: "7" });
  expect(scan('{"\\u0069\\u0064":"a","r\\u0065sult":{}}')).toEqual({ kind: "response", outcome: "result", idKey: '"a"' });
  expect(scan('{"id":1,"\\u0065rror":{"code":1,"message":"m"}}')).toEqual({ kind: "response", outcome: "error", idKey: "1" });
  expect(scan('{"jsonrpc":"2.0","id":"s","met\\u0068od":"ping"}')).toEqual({ kind: "request", outcome: null, idKey: '"s"' });
  expect(scan('{"jsonrpc":"2.0","\\u006dethod":"notifications/progress"}')?.kind).toBe("notification");
});

test("the id's value is decoded: an escaped string id matches the plain one", () => {
  expect(scan('{"id":"\\u0061b\\/c","result":1}')?.idKey).toBe(JSON.stringify("ab/c"));
  expect(scan('{"id":1e0,"result":1}')?.idKey).toBe("1");
  expect(scan('{"id":null,"result":1}')?.idKey).toBeNull();
  expect(scan('{"id":{"n":1},"result":1}')?.idKey).toBeNull();
  expect(scan('{"id":1e400,"result":1}')?.idKey).toBeNull();
});

test("a duplicated key, at any depth and however it is written, refuses the line", () => {
  expect(scan('{"id":1,"result":{},"\\u0069d":2}')).toEqual({ kind: "response", outcome: "result", idKey: "2", refused: "duplicate_key" });
  expect(scan('{"id":1,"result":{"tools":[{"name":"exec","n\\u0061me":"echo"}]}}')?.refused).toBe("duplicate_key");
  expect(scan(`{"id":1,"result":{${Array.from({ length: 20 }, (_, i) => `"k${i}":1`).join(",")},"k7":2}}`)?.refused).toBe("duplicate_key");
  // Equal keys in different objects are not duplicates.
  expect(scan('{"id":1,"result":{"a":{"x":1},"b":{"x":1}},"x":1}')?.refused).toBeUndefined();
});

test("nesting past the bound refuses the line but still finds its id", () => {
  const deep = `{"id":5,"result":${"[".repeat(SERVER_MAX_DEPTH + 10)}${"]".repeat(SERVER_MAX_DEPTH + 10)}}`;
  expect(scan(deep)).toEqual({ kind: "response", outcome: "result", idKey: "5", refused: "too_deep" });
  expect(scan(`{"id":5,"result":${"[".repeat(SERVER_MAX_DEPTH - 2)}${"]".repeat(SERVER_MAX_DEPTH - 2)}}`)?.refused).toBeUndefined();
});

test("structure is still checked", () => {
  for (const line of ['{"id":1,"result":{"a" 1}}', '{"id":1,"result":[1,}', '{"id":1,"result":{"a":1,}}', '{"id":1 "result":1}', '{"id":1,"result":1}]', '{"id":1,"result":{1:2}}']) {
    expect(scan(line)).toBeNull();
  }
});

test("a line held as pieces reads the same wherever it is cut, escapes and all", () => {
  expectSameInPieces('{"result":{"t":"a\\\\\\"b\\\\"},"jsonrpc":"2.0","\\u0069d":"x\\"y"}');
  expectSameInPieces('{"jsonrpc":"2.0","id":12345,"met\\u0068od":"ping","params":{"a":[1,true,null]}}');
  expectSameInPieces('{"id":1,"result":{"n":1,"\\u006e":2}}');
});
