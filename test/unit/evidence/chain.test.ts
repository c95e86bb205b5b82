import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { Chain, chainAnchor, checkChain, lineSha256, withChain } from "../../../src/evidence/chain.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

test("the anchor is the documented SHA-256 of domain, source, session and log name", () => {
  expect(chainAnchor("vigil://h/a", "s1", "decisions.ndjson")).toBe(sha("vigil.chain.v1\nvigil://h/a\ns1\ndecisions.ndjson"));
  expect(chainAnchor("vigil://h/a", "s1", "receipts.ndjson")).not.toBe(chainAnchor("vigil://h/a", "s1", "decisions.ndjson"));
  expect(chainAnchor("vigil://h/a", "s2", "decisions.ndjson")).not.toBe(chainAnchor("vigil://h/a", "s1", "decisions.ndjson"));
});

test("the chain attributes go right before data, replacing earlier ones", () => {
  const e = withChain({ specversion: "1.0", type: "t", vigilseq: 9, data: { a: 1 }, id: "x" }, 3, "p");
  expect(Object.keys(e)).toEqual(["specversion", "type", "id", "vigilseq", "vigilprev", "data"]);
  expect(e.vigilseq).toBe(3);
});

test("lines link: each vigilprev is the SHA-256 of the line before with its newline", () => {
  const anchor = chainAnchor("vigil://h/a", "s", "decisions.ndjson");
  const chain = Chain.start(anchor);
  const text: string[] = [];
  for (let i = 0; i < 3; i++) {
    const line = chain.line({ specversion: "1.0", data: { i } });
    text.push(line);
    chain.advance(line);
  }
  const parsed = text.map((l) => JSON.parse(l));
  expect(parsed[0].vigilprev).toBe(anchor);
  expect(parsed[1].vigilprev).toBe(sha(`${text[0]}\n`));
  expect(parsed[2].vigilseq).toBe(2);
  expect(chain.state).toEqual({ count: 3, head: sha(`${text[2]}\n`) });

  const file = Buffer.from(`${text.join("\n")}\n`);
  const lines = [];
  let start = 0;
  for (let i = 0; i < 3; i++) {
    const end = file.indexOf(0x0a, start);
    lines.push({ raw: file.subarray(start, end), value: parsed[i] });
    start = end + 1;
  }
  expect(checkChain(lines, anchor).break).toBeNull();
  expect(checkChain([lines[0]!, lines[2]!], anchor).break?.problem).toBe("seq");
  expect(checkChain(lines, chainAnchor("vigil://h/a", "other", "decisions.ndjson")).break?.problem).toBe("prev");
});

test("lineSha256 hashes the line and its newline, from a file's buffer or a lone line", () => {
  const buf = Buffer.from("abc\ndef\nxyz");
  expect(lineSha256(buf.subarray(0, 3))).toBe(sha("abc\n"));
  expect(lineSha256(buf.subarray(4, 7))).toBe(sha("def\n"));
  // No newline follows in the buffer: it is added.
  expect(lineSha256(buf.subarray(8))).toBe(sha("xyz\n"));
  expect(lineSha256(new TextEncoder().encode("q"))).toBe(sha("q\n"));
});
