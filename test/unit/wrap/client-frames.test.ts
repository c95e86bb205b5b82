import { expect, test } from "bun:test";
import { recoverIdFromHead, recoverIdFromTail } from "../../../src/shared/ndjson/message-head.ts";
import { classifyClientLine } from "../../../src/wrap/client-frames.ts";

const classify = (s: string | Uint8Array) => classifyClientLine(typeof s === "string" ? Buffer.from(s) : s);

test("requests, notifications and responses", () => {
  expect(classify('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}')).toMatchObject({
    kind: "request",
    id: 1,
    idKey: "1",
    method: "tools/call",
  });
  expect(classify('{"jsonrpc":"2.0","method":"notifications/initialized"}')).toEqual({ kind: "notification", method: "notifications/initialized" });
  expect(classify('{"jsonrpc":"2.0","id":"s1","result":{}}')).toEqual({ kind: "response", idKey: '"s1"' });
});

test.each([
  ["not json", -32700, null],
  ['{"jsonrpc":"2.0","id":4,"method":"tools/call"', -32700, 4],
  ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, null],
  ['{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}', -32600, 5],
  ['{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{"p":1,"p":2}}}', -32600, 6],
  ['{"jsonrpc":"1.0","id":7,"method":"ping"}', -32600, 7],
  ['{"id":8,"method":"ping"}', -32600, 8],
  ['"hello"', -32600, null],
  ['{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, null],
  ['{"jsonrpc":"2.0","id":9,"method":"x","n":1e400}', -32600, 9],
  ['{"jsonrpc":"2.0","id":10}', -32600, 10],
] as const)("refused: %p → %p (id %p)", (line, code, id) => {
  expect(classify(line)).toMatchObject({ kind: "rejected", code, id });
});

test("invalid UTF-8 is refused as a parse error", () => {
  const bytes = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":3,"method":"ping","x":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
  expect(classify(bytes)).toMatchObject({ kind: "rejected", code: -32700, id: 3 });
});

test("a malformed notification is never answered (no id to answer)", () => {
  expect(classify('{"jsonrpc":"1.0","method":"notifications/x"}')).toMatchObject({ kind: "rejected", id: null, notification: true });
});

test("ids of over-cap messages come only from the top level of head or tail", () => {
  expect(recoverIdFromHead(Buffer.from('{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"x":"aaaa'))).toBe(12);
  expect(recoverIdFromHead(Buffer.from('{"id":"a-1","jsonrpc":"2.0"'))).toBe("a-1");
  expect(recoverIdFromHead(Buffer.from('{"result":{"id":5,"x":"aaaa'))).toBeNull();
  expect(recoverIdFromTail(Buffer.from('aaaa"}]},"jsonrpc":"2.0","id":77}'))).toBe(77);
  expect(recoverIdFromTail(Buffer.from('aaaa","id":77}}'))).toBeNull();
});
