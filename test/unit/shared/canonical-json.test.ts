import { expect, test } from "bun:test";
import { canonicalJson } from "../../../src/shared/canonical-json.ts";
import { canonicalSha256 } from "../../../src/shared/digest.ts";

test("RFC 8785: keys sorted by UTF-16 code units, no whitespace, ES number form", () => {
  expect(canonicalJson({ b: 1, a: [true, null, "x"], "\u20ac": 1, "\ud83d\ude00": 2, "\r": 3 })).toBe(
    '{"\\r":3,"a":[true,null,"x"],"b":1,"€":1,"😀":2}',
  );
  expect(canonicalJson([1e21, 1e-7, -0, 0.1, 100])).toBe("[1e+21,1e-7,0,0.1,100]");
  expect(canonicalJson("\u0001\u001f/é")).toBe('"\\u0001\\u001f/é"');
});

test("the digest does not depend on key order or number spelling", () => {
  expect(canonicalSha256(JSON.parse('{"a":1e2,"b":{"y":1,"x":2}}'))).toBe(canonicalSha256(JSON.parse('{"b":{"x":2,"y":1},"a":100}')));
});

test("non-finite numbers cannot be canonicalized", () => {
  expect(() => canonicalJson({ n: Number.POSITIVE_INFINITY })).toThrow();
});
