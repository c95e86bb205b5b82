// Transcript segments and retention against the compiled binary (issue 12 item A): with a tiny
// segment size (VIGIL_TRANSCRIPT_SEGMENT_BYTES) and retain bound (--transcript-retain-bytes), a
// session's transcript files stay within the bound however many frames it stores; get_transcript
// and ?since= from the deleted range answer transcript_pruned naming the oldest seq still stored,
// and a restart (which reads only the live segment) keeps numbering and answering the same way.
import { describe, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { LineClient } from "../helpers/fixture.ts";
import { type Daemon, SseReader, command, framesUrl, serveEnvironment, stopDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();
const SEGMENT = 4096;
const RETAIN = 16_384;

async function startDaemon(env: { configFile: string; stateDir: string }): Promise<Daemon> {
  const client = new LineClient(
    [VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0", "--transcript-retain-bytes", String(RETAIN)],
    { env: vigilEnv({ VIGIL_TRANSCRIPT_SEGMENT_BYTES: String(SEGMENT) }) },
  );
  cleanups.add(() => client.dispose());
  await client.waitForStderr("vigil serve listening http://", 20_000);
  return { client, base: /vigil serve listening (http:\/\/\S+)/.exec(client.stderrText())![1]! };
}

/** The transcript segment files of a session and their total size. */
function segments(sessionDir: string): { names: string[]; bytes: number } {
  const names = readdirSync(sessionDir).filter((n) => n === "transcript.jsonl" || /^transcript\.jsonl\.\d{16}$/.test(n)).sort();
  // A segment deleted between the listing and its stat counts for nothing.
  return { names, bytes: names.reduce((n, name) => n + (statSync(join(sessionDir, name), { throwIfNoEntry: false })?.size ?? 0), 0) };
}

type Pruned = { code: string; message: string; oldest_seq: number };

async function getTranscriptPruned(d: Daemon, since: number): Promise<Pruned> {
  const { body } = await command(d, "ops", { type: "get_transcript", id: `t${since}`, since });
  expect(body).toMatchObject({ type: "response", command: "get_transcript", success: false, error: { code: "transcript_pruned" } });
  return body.error as Pruned;
}

async function ssePruned(d: Daemon, since: number): Promise<Pruned> {
  const res = await fetch(framesUrl(d.base, "ops", since), { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(410);
  const body = (await res.json()) as { error: Pruned };
  expect(body.error.code).toBe("transcript_pruned");
  return body.error;
}

describe("transcript segments and retention", () => {
  test("many frames: files stay within the bound; pruned ranges answer transcript_pruned with the oldest seq, also after a restart", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-serve-retention", fixture: false });
    const sessionDir = join(env.stateDir, "sessions", "ops");
    const d = await startDaemon(env);
    // Every command's response is a stored frame of a few hundred bytes: 400 of them are about
    // ten times the retain bound.
    let last = 0;
    for (let i = 0; i < 400; i++) {
      const { status, body } = await command(d, "ops", { type: "get_state", id: `s${i}` });
      expect(status).toBe(200);
      last = body.seq;
    }
    expect(last).toBe(400);
    const bounded = await waitFor(() => segments(sessionDir), {
      until: (s) => s.bytes <= RETAIN && !s.names.includes("transcript.jsonl"),
      timeoutMs: 10_000,
      label: "the transcript pruned to the retain bound",
      show: (s) => JSON.stringify(s),
    });
    expect(bounded.names.length).toBeGreaterThan(1);

    const viaCommand = await getTranscriptPruned(d, 1);
    expect(viaCommand.oldest_seq).toBeGreaterThan(2);
    expect(viaCommand.message).toContain(`seq ${viaCommand.oldest_seq}`);
    const viaSse = await ssePruned(d, 1);
    expect(viaSse.oldest_seq).toBeGreaterThanOrEqual(viaCommand.oldest_seq);

    // From the oldest seq on, the replay works and starts exactly there.
    const oldest = viaSse.oldest_seq;
    const replay = await SseReader.open(cleanups, framesUrl(d.base, "ops", oldest - 1));
    await replay.untilNth(() => true, 3);
    expect(replay.frames[0]!.seq).toBe(oldest);
    expect(replay.frames.map((f) => f.seq)).toEqual(replay.frames.map((_, i) => oldest + i));
    replay.close();

    expect((await stopDaemon(d)).code).toBe(0);
    const again = await startDaemon(env);
    const after = await getTranscriptPruned(again, 1);
    expect(after.oldest_seq).toBeGreaterThanOrEqual(oldest);
    expect((await ssePruned(again, 0)).oldest_seq).toBe(after.oldest_seq);
    const { body } = await command(again, "ops", { type: "get_state", id: "after-restart" });
    const lastBefore = segments(sessionDir);
    expect(body.seq).toBeGreaterThan(last);
    expect(lastBefore.bytes).toBeLessThanOrEqual(RETAIN);
    expect((await stopDaemon(again)).code).toBe(0);
  });
});
