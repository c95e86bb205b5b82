/**
 * The floor for `bench/serve/run.ts`: a minimal Bun.serve SSE broadcaster with the daemon's URL
 * shape and none of its work (no session, no transcript, no command parsing or validation).
 *
 *   GET  /v1/sessions/<any>/frames     SSE: a comment at once, then every frame as `event: frame`
 *   POST /v1/sessions/<any>/commands   builds a get_state-like response frame (seq, time, id), pushes
 *                                      it to every attached stream, and answers it as JSON
 *
 *   bun bench/serve/baseline-sse.ts    prints `{"url":…,"pid":…}` on stdout; runs until SIGTERM
 */
const encoder = new TextEncoder();

/**
 * The broadcaster on a loopback port of its own; `close` ends every attached stream. Exported so
 * that bench/serve/hotpath.ts drives this very code in process, next to the daemon's.
 */
export function baselineServer(): { server: ReturnType<typeof Bun.serve>; close(): void } {
  const clients = new Set<ReadableStreamDefaultController<Uint8Array>>();
  let seq = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      if (req.method === "GET") {
        let me: ReadableStreamDefaultController<Uint8Array>;
        const stream = new ReadableStream<Uint8Array>({
          start(c) {
            me = c;
            clients.add(c);
            c.enqueue(encoder.encode(": attached\n\n"));
          },
          cancel: () => void clients.delete(me),
        });
        return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
      }
      const command = (await req.json()) as { id: string; type: string };
      const n = ++seq;
      const json = JSON.stringify({
        seq: n, time: new Date().toISOString(), type: "response", id: command.id, command: command.type, success: true,
        data: { protocol_version: 1, name: "fan", state: "idle", queued: { follow_up: 0, steer: 0 }, pending_injections: 0, last_seq: n - 1 },
      });
      const event = encoder.encode(`event: frame\nid: ${n}\ndata: ${json}\n\n`);
      for (const c of clients) c.enqueue(event);
      return new Response(json, { headers: { "content-type": "application/json" } });
    },
  });
  return { server, close: () => { for (const c of clients) c.close(); } };
}

// Run as a process (bench/serve/run.ts spawns it): serve until SIGTERM, the URL on stdout.
if (import.meta.main) {
  const { server } = baselineServer();
  process.on("SIGTERM", () => process.exit(0));
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${server.port}`, pid: process.pid })}\n`);
}
