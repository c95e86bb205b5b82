// The one reader of an over-cap message's head: ids are read as a JSON parser reads them.
import { expect, test } from "bun:test";
import { overCapFacts, recoverIdFromHead, recoverIdFromTail, scanHead } from "../../../src/shared/ndjson/message-head.ts";

const head = (text: string) => Buffer.from(text);

test("the top-level id is recovered wherever it stands among the complete members of the head", () => {
  expect(recoverIdFromHead(head('{"method":"tools/call","id":9,"params":{"arguments":{"x":"aaaa'))).toBe(9);
  expect(recoverIdFromHead(head('{"jsonrpc":"2.0","id":"req-1","params":{"x":"aaaa'))).toBe("req-1");
});

test("keys and values are decoded: an escaped key is the key a client's parser sees", () => {
  expect(recoverIdFromHead(head('{"jsonrpc":"2.0","\\u0069d":4,"params":{"x":"aaaa'))).toBe(4);
  expect(recoverIdFromHead(head('{"id":"a\\u002db","params":{"x":"aaaa'))).toBe("a-b");
});

test("an id nested in params or result, cut off by the head, or not a valid id is not recovered", () => {
  expect(recoverIdFromHead(head('{"params":{"id":5,"x":"aaaa'))).toBeNull();
  expect(recoverIdFromHead(head('{"result":{"id":5,"x":"aaaa'))).toBeNull();
  expect(recoverIdFromHead(head('{"jsonrpc":"2.0","id":"abc'))).toBeNull();
  expect(recoverIdFromHead(head('{"id":12'))).toBeNull(); // no delimiter yet: the number may go on
  expect(recoverIdFromHead(head('{"id":{"n":1},"params":{'))).toBeNull();
  expect(recoverIdFromHead(head(`{"id":"${"x".repeat(257)}","params":{`))).toBeNull();
});

test("a later duplicate id wins, as with JSON.parse", () => {
  expect(recoverIdFromHead(head('{"id":1,"id":2,"params":{"x":"aa'))).toBe(2);
  expect(scanHead('{"id":1,"id":null,"params":{').id).toBeUndefined();
});

test("the tail gives the id only as the last member of the top-level object", () => {
  expect(recoverIdFromTail(head('aaaa"}]},"jsonrpc":"2.0","id":"z"}'))).toBe("z");
  expect(recoverIdFromTail(head('aaaa","id":77}}'))).toBeNull();
});

test("the tail's key and value are decoded before they are compared (issue 11 item 1)", () => {
  expect(recoverIdFromTail(head('aaaa"}]},"jsonrpc":"2.0","\\u0069d":77}'))).toBe(77);
  expect(recoverIdFromTail(head('aaaa"}]},"\\u0069\\u0064":"a\\u002db"}'))).toBe("a-b");
  expect(recoverIdFromTail(head('aaaa"}]},"idx":77}'))).toBeNull();
  expect(recoverIdFromTail(head('aaaa"}]},"\\u0069d":1.5e2}'))).toBe(150);
  expect(recoverIdFromTail(head('aaaa"}]},"\\u0069d":77}}'))).toBeNull();
});

test("over-cap facts: the tail's id first, and a head with a method never answers a request", () => {
  expect(overCapFacts(head('{"jsonrpc":"2.0","id":1,"result":{"x":"aaa'), head('aaa"}},"id":2}'))).toEqual({ id: 2, hasMethod: false });
  expect(overCapFacts(head('{"jsonrpc":"2.0","\\u0069d":3,"result":{"x":"aaa'), head('aaa"}}}'))).toEqual({ id: 3, hasMethod: false });
  expect(overCapFacts(head('{"jsonrpc":"2.0","met\\u0068od":"x","params":{"a":"aaa'), head('aaa"}},"id":2}'))).toEqual({ id: 2, hasMethod: true });
});
