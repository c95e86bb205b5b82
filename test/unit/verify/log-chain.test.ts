/** The verifier's recomputed chain (log-chain.ts): the heads it answers are the producer's, at every count. */
import { expect, test } from "bun:test";
import { Chain, chainAnchor } from "../../../src/evidence/chain.ts";
import { chainFinding, linkOf, recomputeChain } from "../../../src/verify/log-chain.ts";

const anchor = chainAnchor("vigil://t", "s", "decisions.ndjson");

function produce(n: number): { lines: Uint8Array[]; heads: string[] } {
  const c = Chain.start(anchor);
  const lines: Uint8Array[] = [];
  const heads = [c.state.head];
  for (let i = 0; i < n; i++) {
    const line = c.line({ specversion: "1.0", data: { i } });
    c.advance(line);
    lines.push(Buffer.from(line));
    heads.push(c.state.head);
  }
  return { lines, heads };
}

const links = (lines: Uint8Array[]) => lines.map((l) => linkOf(l, JSON.parse(Buffer.from(l).toString())));

test("headAt(count) is the producer's head after count records, for every count; null past the end", () => {
  const { lines, heads } = produce(6);
  const chain = recomputeChain(links(lines), anchor);
  expect(chain.break).toBeNull();
  expect(chain.head).toEqual({ count: 6, head: heads[6]! });
  for (let n = 0; n <= 6; n++) expect(chain.headAt(n)).toBe(heads[n]!);
  expect(chain.headAt(7)).toBeNull();
  expect(chain.headAt(-1)).toBeNull();
  expect(chain.headAt(1.5)).toBeNull();
  expect(chainFinding("decisions.ndjson", chain)).toBeNull();
});

test("after a break, heads are known only up to the last line that links", () => {
  const { lines, heads } = produce(5);
  lines.splice(3, 1);
  const chain = recomputeChain(links(lines), anchor);
  expect(chain.break).toMatchObject({ line: 4, problem: "seq" });
  expect(chain.head.count).toBe(3);
  for (let n = 0; n <= 3; n++) expect(chain.headAt(n)).toBe(heads[n]!);
  expect(chain.headAt(4)).toBeNull();
  expect(chainFinding("decisions.ndjson", chain)).toMatchObject({ code: "chain_broken", effect: "unknown", message: "hash chain broken at line 4: vigilseq 4, expected 3" });
});

test("a line that is not an object breaks the chain where it stands", () => {
  const { lines } = produce(2);
  const chain = recomputeChain([linkOf(lines[0]!, JSON.parse(Buffer.from(lines[0]!).toString())), linkOf(lines[1]!, null)], anchor);
  expect(chain.break).toMatchObject({ line: 2, problem: "shape" });
});
