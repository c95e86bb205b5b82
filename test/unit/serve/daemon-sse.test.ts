/**
 * One SSE subscriber (daemon/sse.ts; issue 11 item 6): a client that keeps up gets every frame,
 * even one larger than the lag limit; one that falls further behind than the limit has its stream
 * errored (which makes Bun.serve close the connection), not merely ended.
 */
import { describe, expect, test } from "bun:test";
import { SseStream } from "../../../src/serve/daemon/sse.ts";
import { Session } from "../../../src/serve/session/session.ts";
import { unitSessions } from "../../helpers/unit-sessions.ts";
import { waitFor } from "../../helpers/wait.ts";

const sessions = unitSessions("vigil-unit-sse");

async function openSession(): Promise<Session> {
  const runner = async () => ({ status: "ok" as const, appended: [], steersSeen: 0 });
  return sessions.track(await Session.open({ name: "s1", dir: sessions.dir(), runner }));
}

const LIMIT = 4096;
const bigCommand = (id: string) => ({ type: "get_state" as const, id: `${id}${"i".repeat(100)}` });

describe("SseStream", () => {
  test("a client that reads gets a frame larger than the limit", async () => {
    const s = await openSession();
    let closed = 0;
    const sse = new SseStream(s, { since: null, maxBufferBytes: 64, onClose: () => closed++ });
    const reader = sse.stream.getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toContain(": attached");
    await s.handle(bigCommand("g1"));
    const text = decoder.decode((await reader.read()).value);
    expect(text).toContain(`"id":"g1${"i".repeat(100)}"`);
    expect(closed).toBe(0);
    sse.close();
    expect((await reader.read()).done).toBe(true);
    expect(closed).toBe(1);
  });

  test("a read already waiting gets the next frame at once; the stream ends when closed, or ended, while a read waits", async () => {
    const s = await openSession();
    const decoder = new TextDecoder();
    for (const end of ["close", "endAfterSent"] as const) {
      let closed = 0;
      const sse = new SseStream(s, { since: null, onClose: () => closed++ });
      const reader = sse.stream.getReader();
      expect(decoder.decode((await reader.read()).value)).toContain(": attached");
      const waiting = reader.read(); // nothing queued: the stream waits for the next frame
      await waitFor(() => sse.pullWaiting, { timeoutMs: 5000, label: "the read waits" });
      await s.handle({ type: "get_state", id: `w-${end}` });
      expect(decoder.decode((await waiting).value)).toContain(`"id":"w-${end}"`);
      const last = reader.read();
      await waitFor(() => sse.pullWaiting, { timeoutMs: 5000, label: "the last read waits" });
      sse[end]();
      expect((await last).done).toBe(true);
      expect(closed).toBe(1);
    }
  });

  test("a client more than the limit behind is cut off: its stream errors", async () => {
    const s = await openSession();
    let closed = 0;
    const sse = new SseStream(s, { since: null, maxBufferBytes: LIMIT, onClose: () => closed++ });
    const reader = sse.stream.getReader();
    await reader.read(); // the attach comment; then the client stops reading
    for (let i = 0; closed === 0 && i < 200; i++) await s.handle(bigCommand(`g${i}`));
    expect(closed).toBe(1);
    await expect(reader.read()).rejects.toThrow("fell too far behind");
  });
});
