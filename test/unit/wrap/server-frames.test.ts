import { expect, test } from "bun:test";
import { scanServerFrame } from "../../../src/wrap/server-frames.ts";

const scan = (s: string) => scanServerFrame(Buffer.from(s));

test("responses: id found wherever it stands, result vs error", () => {
  expect(scan('{"jsonrpc":"2.0","id":7,"result":{}}')).toEqual({ kind: "response", outcome: "result", idKey: "7" });
  expect(scan('{"result":{"content":[{"type":"text","text":"a \\"id\\":9 }"}]},"jsonrpc":"2.0","id":"r-1"}')).toEqual({
    kind: "response",
    outcome: "result",
    idKey: '"r-1"',
  });
  expect(scan('{"jsonrpc":"2.0","id":1.0,"error":{"code":-1,"message":"x"}}')).toEqual({ kind: "response", outcome: "error", idKey: "1" });
});

test("nested ids are not mistaken for the message id", () => {
  expect(scan('{"result":{"id":99,"list":[{"id":5}]},"jsonrpc":"2.0","id":3}')?.idKey).toBe("3");
});

test("server requests and notifications", () => {
  expect(scan('{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}')?.kind).toBe("request");
  expect(scan('{"jsonrpc":"2.0","method":"notifications/progress","params":{}}')?.kind).toBe("notification");
});

test.each([
  "fixture log: starting",
  "",
  "[1,2]",
  '{"a":1',
  '{"a":1} trailing',
  '{"result":"unterminated}',
  '{"jsonrpc":"2.0"}',
  '{"result":1,"id":7}}',
  "{'single':1}",
])("not a JSON-RPC object: %p", (line) => {
  expect(scan(line)).toBeNull();
});

test("a multi-megabyte result is classified without being materialized", () => {
  const big = `{"result":{"content":[{"type":"text","text":"${"x\\\\".repeat(2_000_000)}"}]},"jsonrpc":"2.0","id":42}`;
  expect(scan(big)).toEqual({ kind: "response", outcome: "result", idKey: "42" });
});
