/**
 * Large server lines held across reads (wrap.md §2, §11): wrap holds each in reused blocks until it
 * is complete and relayed. Back-to-back large responses with different bytes must each reach the
 * client exactly as the server wrote them (no block reused while a line that sits in it is still
 * being relayed), and each receipt's response digest must be the SHA-256 of exactly those bytes.
 */
import { expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import { sha256Hex, startWrap } from "../helpers/wrap.ts";

e2eSuite();

/** The fixture's response framing: `{"result":…,"jsonrpc":"2.0","id":…}`. */
function fixtureResponse(id: string, result: unknown): string {
  return `{"result":${JSON.stringify(result)},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
}

test("pipelined multi-megabyte responses with different bytes arrive exact, with exact receipt digests", async () => {
  const s = startWrap();
  await s.initialize();
  // Sizes around the 1 MiB "parts" threshold and the pool's block size; every text is distinct.
  const texts = ["a", "b", "c", "d", "e"].map((ch, i) => `${ch}${i}`.repeat([700_000, 1_200_000, 300_000, 2_000_000, 600_000][i]! / 2));
  const ids = texts.map((_, i) => `big-${i}`);
  // All sent at once: the server answers back to back, so lines follow each other within reads.
  s.client.send(
    texts.map((text, i) => `{"jsonrpc":"2.0","id":"${ids[i]}","method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}}}\n`).join(""),
  );
  const expected = texts.map((text, i) => fixtureResponse(ids[i]!, { content: [{ type: "text", text }] }));
  for (let i = 0; i < texts.length; i++) expect(await s.client.next(30_000)).toBe(expected[i]!);
  expect((await s.finish()).code).toBe(0);
  const receipts = s.capture().receipts.filter((r: any) => ids.includes(r.data.request_id));
  expect(receipts.length).toBe(texts.length);
  for (const r of receipts) {
    const i = ids.indexOf(r.data.request_id);
    expect(r.data.outcome).toBe("response");
    expect(r.data.response_bytes).toBe(Buffer.byteLength(expected[i]!));
    expect(r.data.response_sha256).toBe(sha256Hex(expected[i]!));
  }
});
