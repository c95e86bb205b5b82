/**
 * The daemon's HTTP API on one Bun.serve listener (serve.md §1, §4):
 *
 *   POST /v1/sessions/<name>/commands   one JSON command → its `response` frame as JSON
 *   GET  /v1/sessions/<name>/frames     SSE stream of frames (`?since=<seq>` replays)
 *   GET  /v1/health                     {ok, reasons, sessions, max_sessions, version, webhook?} — always 200 (health.ts)
 *   GET  /metrics                       Prometheus text format 0.0.4 (metrics-route.ts), unless on --metrics-listen or off
 *   POST <callback path>/_vigil/mcp-events/<token>, GET /.well-known/mcp-webhook-receiver.json
 *                                       webhook deliveries, with a callback URL (webhook-receiver.ts)
 *
 * Bad requests get a JSON body `{error:{code,message}}`: 404 unknown path, 405 wrong method, 400 bad
 * session name / bad `since` (not an integer; or beyond the session's last seq, then the error also
 * carries `last_seq`), 410 `transcript_pruned` for a `since` whose frames retention deleted (with
 * `oldest_seq`), 415 not application/json, 413 over 1 MiB. A command that does not
 * parse gets 400 with its refusal `response` frame (which carries the same `error`), or 413 when too
 * large. The listener's own cap (`maxRequestBodySize`) is a backstop above the 1 MiB command limit,
 * so that bodies between the two still get the JSON 413 (above it Bun answers a bare 413).
 * A session that cannot be opened gets 503: `too_many_sessions` past `--max-sessions`,
 * `too_many_open_files` when the process ran out of file descriptors (EMFILE/ENFILE: said on
 * stderr; the other sessions go on), else `session_unavailable`.
 */
import type { Server } from "bun";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import type { ServeApp } from "../types.ts";
import { PROTOCOL_LIMITS } from "../protocol/commands.ts";
import { parseCommand, tooLarge } from "../protocol/parse-command.ts";
import { isValidSessionName } from "../state/paths.ts";
import { prunedBody, sincePruned } from "../state/transcript-pruned.ts";
import type { HealthReport } from "./health.ts";
import { type SessionRegistry, TooManySessions } from "./registry.ts";
import { SseStream } from "./sse.ts";
import type { WebhookReceiver } from "./webhook-receiver.ts";

export const MAX_COMMAND_BYTES = PROTOCOL_LIMITS.commandBytes;
/** The listener's hard cap (see the header). */
export const LISTENER_BODY_CAP = 4 * MAX_COMMAND_BYTES;

const SESSION_PATH = /^\/v1\/sessions\/([^/]+)\/(commands|frames)$/;

export function jsonError(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ error: { code, message } }, { status, headers });
}

export interface DaemonHandler {
  fetch(req: Request, server: Server<undefined>): Promise<Response>;
  /** Ends every SSE stream (shutdown). */
  closeStreams(): void;
  /** Ends the SSE streams of one session once their queued frames are sent (it failed). */
  endStreamsOf(name: string): void;
  /** SSE streams attached now (the `vigil_sse_clients` gauge). */
  readonly sseClients: number;
}

/**
 * `webhook`: the receiver of webhook deliveries (webhook-receiver.ts), when a callback URL is configured.
 * `metrics`: the `/metrics` route (metrics-route.ts); null when metrics are off or served on `--metrics-listen`.
 */
export function createDaemonHandler(
  app: ServeApp,
  registry: SessionRegistry,
  health: () => HealthReport,
  webhook: WebhookReceiver | null = null,
  metrics: ((req: Request) => Response) | null = null,
): DaemonHandler {
  const streams = new Map<SseStream, string>();

  async function fetch(req: Request, server: Server<undefined>): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname === "/v1/health") {
      if (req.method !== "GET" && req.method !== "HEAD") return methodNotAllowed("GET");
      return Response.json({ ...health(), sessions: registry.size, max_sessions: registry.maxSessions, version: app.version });
    }
    if (metrics !== null && url.pathname === "/metrics") return metrics(req);
    const m = SESSION_PATH.exec(url.pathname);
    if (m === null) return webhook?.handle(req, url, server) ?? jsonError(404, "not_found", `no such endpoint: ${req.method} ${url.pathname.slice(0, 200)}`);
    const name = safeDecode(m[1]!);
    if (name === null || !isValidSessionName(name)) {
      return jsonError(400, "invalid_session_name", "invalid session name: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'");
    }
    if (m[2] === "commands") return req.method === "POST" ? command(req, name) : methodNotAllowed("POST");
    return req.method === "GET" ? frames(req, url, name, server) : methodNotAllowed("GET");
  }

  async function command(req: Request, name: string): Promise<Response> {
    const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json") return jsonError(415, "unsupported_media_type", "the command body must be application/json");
    const declared = req.headers.get("content-length");
    if (declared !== null && Number(declared) > MAX_COMMAND_BYTES) {
      return Response.json(tooLarge("", Number(declared)).response, { status: 413 });
    }
    const body = await readBounded(req, MAX_COMMAND_BYTES, declared !== null);
    if (body.tooLarge) return Response.json(tooLarge(body.head, body.size).response, { status: 413 });
    const parsed = parseCommand(body.bytes);
    if (!parsed.ok) return Response.json(parsed.response, { status: parsed.response.error.code === "too_large" ? 413 : 400 });
    let lease;
    try {
      lease = await registry.acquire(name);
    } catch (e) {
      return sessionUnavailable(name, e);
    }
    try {
      return Response.json(await lease.session.handle(parsed.command));
    } finally {
      lease.release();
    }
  }

  async function frames(req: Request, url: URL, name: string, server: Server<undefined>): Promise<Response> {
    const raw = url.searchParams.get("since");
    let since: number | null = null;
    if (raw !== null) {
      if (!/^[0-9]{1,15}$/.test(raw)) return jsonError(400, "invalid_since", "since must be a non-negative integer (a frame seq)");
      since = Number(raw);
    }
    let lease;
    try {
      lease = await registry.acquire(name);
    } catch (e) {
      return sessionUnavailable(name, e);
    }
    const beyond = sinceBeyondLast(since, lease.session.lastSeq);
    if (beyond !== null) {
      lease.release();
      return Response.json({ error: { code: "invalid_since", message: beyond, last_seq: lease.session.lastSeq } }, { status: 400 });
    }
    const pruned = sincePruned(since, lease.session.oldestSeq);
    if (pruned !== null) {
      lease.release();
      return Response.json(prunedBody(pruned), { status: 410 });
    }
    server.timeout(req, 0);
    const sse = new SseStream(lease.session, {
      since,
      onClose: () => {
        streams.delete(sse);
        lease.release();
      },
    });
    streams.set(sse, name);
    req.signal.addEventListener("abort", () => sse.close(), { once: true });
    return new Response(sse.stream, {
      headers: { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" },
    });
  }

  return {
    fetch,
    closeStreams() {
      for (const s of [...streams.keys()]) s.close();
    },
    endStreamsOf(name) {
      for (const [s, of] of [...streams]) if (of === name) s.endAfterSent();
    },
    get sseClients() {
      return streams.size;
    },
  };
}

/**
 * `?since=N` asks for the frames after N, so N must be a seq the session has had. One past its last
 * frame is refused rather than honoured by waiting (issue 11 item 7): those frames were lost or never
 * existed (a wiped or different state directory), and a stream that waited would silently skip
 * every live frame up to N. The answer names the last seq, so the client can resume from it.
 */
export function sinceBeyondLast(since: number | null, lastSeq: number): string | null {
  if (since === null || since <= lastSeq) return null;
  return `since ${since} is beyond the session's last frame (seq ${lastSeq}): resume with since=${lastSeq} or less, or without since for the next frame`;
}

function methodNotAllowed(allow: string): Response {
  return jsonError(405, "method_not_allowed", `use ${allow}`, { allow });
}

function sessionUnavailable(name: string, e: unknown): Response {
  if (e instanceof TooManySessions) return jsonError(503, "too_many_sessions", e.message);
  logLine(`serve: session ${JSON.stringify(name)} could not be opened: ${errorMessage(e)}`, { level: "error", session: name, code: "session_open_failed" });
  if (outOfDescriptors(e)) {
    return jsonError(503, "too_many_open_files", `session ${JSON.stringify(name)} could not be opened: the daemon is out of file descriptors (lower --max-sessions or raise its open-files limit)`);
  }
  return jsonError(503, "session_unavailable", `session ${JSON.stringify(name)} could not be opened`);
}

/** EMFILE/ENFILE, on the error or on one it wraps. */
function outOfDescriptors(e: unknown): boolean {
  for (let cause = e, depth = 0; cause !== undefined && cause !== null && depth < 5; depth++) {
    const code = errnoCode(cause);
    if (code === "EMFILE" || code === "ENFILE") return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

type BoundedBody = { tooLarge: false; bytes: Uint8Array } | { tooLarge: true; head: Uint8Array; size: number };

/**
 * Reads at most `max` bytes; a longer body is abandoned unread past the cap. `declared`: the request
 * has a Content-Length, already checked ≤ `max`, so the body is that long and is taken whole
 * (`req.bytes()`, native: no body stream, reader and promise per chunk); its length is checked again
 * all the same. Without one (chunked), it is read chunk by chunk and cut off at the cap.
 * The whole-body read costs 40 % less CPU per command, but Bun does not count its buffer as GC
 * pressure: ~11 KiB per command stays in RssAnon until a collection. Measured bounded (issue 16):
 * flat at +12 MiB over 150,000 commands, and back down once idle.
 */
async function readBounded(req: Request, max: number, declared: boolean): Promise<BoundedBody> {
  if (declared) {
    const bytes = await req.bytes();
    return bytes.byteLength > max ? { tooLarge: true, head: bytes.subarray(0, 4096), size: bytes.byteLength } : { tooLarge: false, bytes };
  }
  if (req.body === null) return { tooLarge: false, bytes: new Uint8Array() };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return { tooLarge: true, head: Buffer.concat(chunks).subarray(0, 4096), size };
    }
    chunks.push(value);
  }
  return { tooLarge: false, bytes: Buffer.concat(chunks) };
}
