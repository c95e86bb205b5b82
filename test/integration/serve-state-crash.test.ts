/**
 * The transcript across a real crash: a writer process appending and syncing is SIGKILLed; the
 * next open keeps every record it synced, has contiguous seqs, and appends cleanly after them.
 */
import { afterEach, expect, test } from "bun:test";
import { resolve } from "node:path";
import { ensureSessionDir } from "../../src/serve/state/paths.ts";
import { Transcript } from "../../src/serve/state/transcript.ts";
import { type TmpDir, tmpDir, waitUntil } from "../helpers/fixture.ts";

const TRANSCRIPT_TS = resolve(import.meta.dir, "../../src/serve/state/transcript.ts");

let tmp: TmpDir;
afterEach(() => tmp?.cleanup());

// Appends forever (some records large, so writes span many pages), syncing every 7 records and
// printing the durable seq after each sync.
const writer = `
const { Transcript } = await import(${JSON.stringify(TRANSCRIPT_TS)});
const t = await Transcript.open(process.argv[1]);
for (let i = 0; ; i++) {
  t.append({ type: "message", role: "assistant", text: (i % 5 === 0 ? "x".repeat(300000) : "") + "n" + i });
  if (i % 7 === 6) { await t.sync(); process.stdout.write(t.durableSeq + "\\n"); }
}
`;

test("a SIGKILLed writer: synced records survive, seqs are contiguous, appends continue", async () => {
  tmp = tmpDir("vigil-int-state-crash");
  const dir = ensureSessionDir(tmp.file("state"), "crash");
  const child = Bun.spawn([process.execPath, "-e", writer, dir], { stdout: "pipe", stderr: "pipe" });
  let out = "";
  const reader = child.stdout.getReader();
  const pump = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      out += new TextDecoder().decode(value);
    }
  })();
  const enough = await waitUntil(() => out.split("\n").length > 20, 20_000);
  child.kill("SIGKILL");
  await child.exited;
  await pump;
  expect(enough).toBe(true);
  const reported = out.split("\n").filter((l) => /^\d+$/.test(l)).map(Number);
  const lastDurable = reported.at(-1) ?? 0;
  expect(lastDurable).toBeGreaterThan(0);

  const t = await Transcript.open(dir, { indexEvery: 8 });
  try {
    expect(t.lastSeq).toBeGreaterThanOrEqual(lastDurable);
    const seqs: number[] = [];
    let since = 0;
    for (let pages = 0; pages < 10_000; pages++) {
      const page = await t.readSince(since, { limit: 50, maxBytes: 1 << 20 });
      for (const r of page.records) seqs.push(r.seq);
      since = seqs.at(-1) ?? since;
      if (!page.more) break;
    }
    expect(seqs).toEqual(Array.from({ length: t.lastSeq }, (_, i) => i + 1));
    const next = t.append({ type: "message", role: "user", text: "after the crash" });
    expect(next).toBe(t.lastSeq);
    expect(next).toBe(seqs.length + 1);
    await t.sync();
    expect(t.durableSeq).toBe(next);
    expect((await t.readSince(next - 1)).records).toMatchObject([{ seq: next, text: "after the crash" }]);
  } finally {
    await t.close();
  }
});
