/**
 * The end-to-end harness of the webhook tests (test/e2e/events-webhook*.test.ts): the events
 * fixture over HTTP (http:// callbacks allowed), and `vigil serve` listening on a port chosen
 * before it starts, so `--mcp-events-callback-url` can name it and a restart can keep it (with the
 * same state dir). `postSigned` signs with `standardwebhooks`, for tests that post deliveries
 * themselves. Every wait is bounded; everything started is ended by the given `Cleanups`.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { v1Signature } from "../fixtures/servers/events-fixture/webhook-sign.ts";
import { VIGIL_BIN } from "./bin.ts";
import type { EventsFixture, EventsFixtureEnv } from "./events-fixture.ts";
import { type EventsEnv, eventsEnvironment, httpServer, startEventsDaemon } from "./events-serve.ts";
import type { Cleanups, Daemon } from "./serve.ts";

const STOP_TIMEOUT_MS = 15_000;
const POST_TIMEOUT_MS = 20_000;

/** A port that was free a moment ago on 127.0.0.1 (bound to 0, read, closed). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no port assigned"))));
    });
  });
}

export interface WebhookStackOptions {
  /** The `events` entries of the fixture's server entry. */
  events: Record<string, unknown>[];
  /** More fixture switches (MCP_FIXTURE_ALLOW_HTTP_CALLBACK is always on). */
  fixtureEnv?: EventsFixtureEnv;
  /** A path on the callback URL (e.g. "/agent"): the receiver then serves `<path>/_vigil/mcp-events/<token>`. */
  callbackPath?: string;
  /** Extra environment for vigil (knobs). */
  knobs?: Record<string, string>;
  /** More top-level config members (e.g. `evidence`). */
  config?: Record<string, unknown>;
  /** The server entry's name (default "fx"). */
  serverName?: string;
  /** The bearer principal vigil sends (default "alice"). */
  principal?: string;
  /** More `vigil serve` arguments. */
  extraArgs?: string[];
  /** The argv prefix (default the compiled binary). */
  vigil?: readonly string[];
  /** Runs once the fixture is up and before vigil first starts (e.g. a /control/jwks mode for the first subscribe). */
  beforeStart?: (fixture: EventsFixture) => Promise<void>;
}

export interface PostSignedOptions {
  secret: string;
  /** webhook-id (default: the body's eventId, else msg_test_<random>). */
  id?: string;
  /** webhook-timestamp (default now, in seconds); any text, e.g. "-9223372036854775808". */
  timestamp?: number | string;
  /** Entries added to webhook-signature after the valid one (e.g. "v1a,…"), or before it with `prepend`. */
  extraSignatures?: string[];
  prependSignatures?: boolean;
  /** More headers, or overrides (a header set to null is left out, e.g. webhook-signature). */
  headers?: Record<string, string | null>;
}

export interface WebhookStack {
  fixture: EventsFixture;
  env: EventsEnv;
  port: number;
  /** http://127.0.0.1:<port>: the daemon's API base (also the callback origin). */
  base: string;
  /** The --mcp-events-callback-url given (base + callbackPath). */
  callbackUrl: string;
  /** The running daemon (replaced by `restart`). */
  readonly daemon: Daemon;
  /** SIGTERM and wait (bounded) for the exit code (null: killed by a signal). */
  stop(): Promise<number | null>;
  /** SIGKILL (a crash) and wait (bounded). */
  kill9(): Promise<void>;
  /** Starts vigil again on the same port and state dir; resolves once it listens. */
  restart(): Promise<Daemon>;
  /** POSTs `body` (object → JSON text) to `url`, signed v1 with `secret` through standardwebhooks. */
  postSigned(url: string, body: string | Record<string, unknown>, o: PostSignedOptions): Promise<Response>;
}

export async function startWebhookStack(cleanups: Cleanups, o: WebhookStackOptions): Promise<WebhookStack> {
  const principal = o.principal ?? "alice";
  const env = await eventsEnvironment(cleanups, {
    fixtureEnv: { ...(o.fixtureEnv ?? {}), MCP_FIXTURE_ALLOW_HTTP_CALLBACK: true },
    servers: (fx) => [{ ...httpServer(fx!, o.serverName ?? "fx", o.events), headers: { Authorization: `Bearer ${principal}` } }],
    ...(o.knobs ? { knobs: o.knobs } : {}),
    ...(o.config ? { config: o.config } : {}),
  });
  const fixture = env.fixture!;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const callbackUrl = `${base}${o.callbackPath ?? ""}`;
  const start = () =>
    startEventsDaemon(cleanups, env, ["--mcp-events-callback-url", callbackUrl, ...(o.extraArgs ?? [])], o.vigil ?? [VIGIL_BIN], `127.0.0.1:${port}`);
  await o.beforeStart?.(fixture);
  let daemon = await start();
  return {
    fixture,
    env,
    port,
    base,
    callbackUrl,
    get daemon() {
      return daemon;
    },
    async stop() {
      process.kill(daemon.client.pid, "SIGTERM");
      return (await daemon.client.exited(STOP_TIMEOUT_MS)).code;
    },
    async kill9() {
      daemon.client.killGroup("SIGKILL");
      await daemon.client.exited(STOP_TIMEOUT_MS);
    },
    async restart() {
      daemon = await start();
      return daemon;
    },
    postSigned,
  };
}

export function postSigned(url: string, body: string | Record<string, unknown>, o: PostSignedOptions): Promise<Response> {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const eventId = typeof body === "object" && typeof body.eventId === "string" ? body.eventId : null;
  const id = o.id ?? eventId ?? `msg_test_${randomBytes(6).toString("hex")}`;
  const timestamp = String(o.timestamp ?? Math.floor(Date.now() / 1000));
  const valid = v1Signature(o.secret, id, timestamp, text);
  const extra = o.extraSignatures ?? [];
  const signature = (o.prependSignatures ? [...extra, valid] : [valid, ...extra]).join(" ");
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": signature,
  };
  for (const [k, v] of Object.entries(o.headers ?? {})) {
    const name = Object.keys(headers).find((h) => h.toLowerCase() === k.toLowerCase()) ?? k;
    if (v === null) delete headers[name];
    else headers[name] = v;
  }
  return fetch(url, { method: "POST", headers, body: text, redirect: "manual", signal: AbortSignal.timeout(POST_TIMEOUT_MS) });
}
