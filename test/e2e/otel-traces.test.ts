// OpenTelemetry traces of `vigil serve` (issue 15 item 2), against the compiled binary: an OTLP/HTTP
// receiver (Bun.serve, port 0) gets the spans of a daemon's event batch run with tool calls — the
// run, its model requests, its tool calls (one denied by the policy) and the delivered batch, all in
// one trace with the right parents — and of a stdio run (flushed at exit). No tool argument, event
// payload, prompt or result text is in any body sent; the OTLP header arrives and is in no stderr
// line. Without the variables (or with them switched off) nothing is sent; malformed ones exit 2;
// an unreachable collector changes nothing but one log line.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import type { RecordedRequest } from "../fixtures/mock-model.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { fixtureArgv } from "../helpers/fixture.ts";
import { StdioServe, eventsEnvironment, httpServer, isStatus, startEventsDaemon } from "../helpers/events-serve.ts";
import { type OtlpSpan, attrs, startOtlpReceiver } from "../helpers/otlp-receiver.ts";
import { type Frame, SseReader, command, framesUrl, isRunEnd, messagesOf, stopDaemon } from "../helpers/serve.ts";

const cleanups = e2eSuite();

const BATCH_MARKER = "[MCP events · batch";
const OTEL_TOKEN = "otel-token-7f3a9c1e5b";
const ARG_TEXT = "ARG-VALUE-d41d8cd98f";
const PAYLOAD_TEXT = "PAYLOAD-TEXT-9e107d9d37";
const PROMPT_TEXT = "PROMPT-TEXT-e4d909c290";
const EVENTS_SESSION = "mcp-events";

/** The mock model: a batch gets two tool calls (one the policy denies), a tool result gets "done", anything else "ok". */
function reply(req: RecordedRequest) {
  const messages = messagesOf(req);
  const last = messages.at(-1);
  if (last?.role === "tool") return { text: "done" };
  const text = typeof last?.content === "string" ? last.content : "";
  if (text.includes(BATCH_MARKER)) {
    return {
      toolCalls: [
        { id: "call-echo-1", name: "tickets__echo", arguments: { text: ARG_TEXT } },
        { id: "call-blob-2", name: "tickets__blob", arguments: { bytes: 7 } },
      ],
    };
  }
  return { text: "ok" };
}

const named = (spans: OtlpSpan[], name: string) => spans.filter((s) => s.name === name);
const childrenOf = (spans: OtlpSpan[], parent: OtlpSpan) => spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);

describe("vigil serve: OpenTelemetry traces", () => {
  test("a daemon's event batch run: run, model requests, tool calls and the delivered batch in one trace, no text, the header secret kept", async () => {
    const receiver = startOtlpReceiver(cleanups);
    const env = await eventsEnvironment(cleanups, {
      // With MCP sessions, so a tool call's span has an `mcp.session.id`.
      fixtureEnv: { MCP_FIXTURE_SESSION: true },
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "ticket.updated", delivery: "poll" }])],
      knobs: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${OTEL_TOKEN},x-tenant=e2e`,
        OTEL_SERVICE_NAME: "vigil-e2e",
      },
    });
    const policyFile = `${env.dir}/policy.yaml`;
    writeFileSync(policyFile, 'version: 1\ntools:\n  deny: ["blob"]\n');
    const config = JSON.parse(await Bun.file(env.configFile).text());
    writeFileSync(env.configFile, JSON.stringify({ ...config, policy: policyFile }));
    env.model.setDefaultReply(reply);

    const d = await startEventsDaemon(cleanups, env);
    // From the first frame (since=0): the subscription may be up before this reader attaches, and a
    // live-only reader would wait for a status frame that went out before it.
    const events = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION, 0));
    await events.until(isStatus("subscribed"));
    await env.fixture!.control("emit", { name: "ticket.updated", event_id: "ev-1", data: { note: PAYLOAD_TEXT } });
    await events.until((f: Frame) => isRunEnd(f) && f.status === "ok");

    // A client's prompt in its own session: a second, separate trace.
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "p"));
    const p = await command(d, "p", { type: "prompt", id: "p1", message: PROMPT_TEXT });
    expect(p.body.success).toBe(true);
    await sse.until(isRunEnd);

    const spans = await receiver.until(
      (s) => named(s, "vigil.events.deliver").length === 1 && named(s, "invoke_agent vigil").length === 2 && s.filter((x) => x.name.startsWith("execute_tool")).length === 2,
      "the batch run's spans and the prompt run's",
    );

    // The batch run: the root of its trace, in the events session.
    const runs = named(spans, "invoke_agent vigil");
    const batchRun = runs.find((r) => attrs(r)["vigil.session"] === EVENTS_SESSION)!;
    expect(batchRun.parentSpanId ?? "").toBe("");
    expect(batchRun.kind).toBe(1);
    expect(attrs(batchRun)).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "vigil",
      "gen_ai.conversation.id": EVENTS_SESSION,
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "mock-model",
      "vigil.run.trigger": "mcp_events",
      "vigil.run.status": "ok",
    });
    expect(batchRun.resource).toMatchObject({ "service.name": "vigil-e2e" });

    const children = childrenOf(spans, batchRun);
    const chats = children.filter((s) => s.name === "chat mock-model");
    expect(chats).toHaveLength(2);
    for (const c of chats) {
      expect(c.kind).toBe(3);
      expect(attrs(c)).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "mock-model", "gen_ai.conversation.id": EVENTS_SESSION });
      expect(attrs(c)["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
      expect(attrs(c)["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    }

    const echo = children.find((s) => s.name === "execute_tool tickets__echo")!;
    expect(echo).toBeDefined();
    expect(attrs(echo)).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "tickets__echo",
      "gen_ai.tool.call.id": "call-echo-1",
      "mcp.method.name": "tools/call",
      "vigil.tool.server": "tickets",
      "vigil.tool.decision": "allow",
      "vigil.policy.reason_code": "P_ALLOW",
      "network.transport": "tcp",
    });
    expect(attrs(echo)["mcp.session.id"]).toBeString();
    expect(echo.status?.code ?? 0).not.toBe(2);
    // The denied call is a span too: the decision's code, status error, and it never reached the server.
    const denied = children.find((s) => s.name.startsWith("execute_tool") && attrs(s)["gen_ai.tool.call.id"] === "call-blob-2")!;
    expect(denied).toBeDefined();
    expect(denied.status?.code).toBe(2);
    expect(attrs(denied)).toMatchObject({ "error.type": "E_TOOL_DENIED", "vigil.tool.decision": "deny", "vigil.policy.reason_code": "E_TOOL_DENIED" });
    expect(attrs(denied)["mcp.method.name"]).toBeUndefined();

    const batch = named(spans, "vigil.events.deliver")[0]!;
    expect(batch.traceId).toBe(batchRun.traceId);
    expect(batch.parentSpanId).toBe(batchRun.spanId);
    expect(attrs(batch)).toMatchObject({
      "vigil.session": EVENTS_SESSION,
      "vigil.events.batch.size": 1,
      "vigil.events.behavior": "follow_up",
      "vigil.events.servers": ["tickets"],
      "vigil.events.names": ["tickets/ticket.updated"],
      "vigil.events.outcome": "delivered",
      "vigil.run.id": attrs(batchRun)["vigil.run.id"],
    });

    // The prompt's run: its own trace, with its model request under it.
    const promptRun = runs.find((r) => attrs(r)["vigil.session"] === "p")!;
    expect(promptRun.traceId).not.toBe(batchRun.traceId);
    expect(attrs(promptRun)).toMatchObject({ "gen_ai.conversation.id": "p", "vigil.run.trigger": "prompt" });
    expect(childrenOf(spans, promptRun).map((s) => s.name)).toEqual(["chat mock-model"]);

    // What went over the wire: OTLP/HTTP JSON to /v1/traces, with the configured headers, and no text.
    expect(receiver.requests.length).toBeGreaterThan(0);
    for (const r of receiver.requests) {
      expect(r).toMatchObject({ method: "POST", path: "/v1/traces" });
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers.authorization).toBe(`Bearer ${OTEL_TOKEN}`);
      expect(r.headers["x-tenant"]).toBe("e2e");
      for (const text of [ARG_TEXT, PAYLOAD_TEXT, PROMPT_TEXT, "ev-1"]) expect(r.body).not.toContain(text);
    }

    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });
    const stderr = d.client.stderrText();
    expect(stderr).toContain(`traces: OTLP/HTTP (JSON) to ${receiver.url}/v1/traces`);
    expect(stderr).not.toContain(OTEL_TOKEN);
    expect(stderr).not.toContain("traces: export");
  });

  test("stdio mode exports too, and what is queued at exit is flushed", async () => {
    const receiver = startOtlpReceiver(cleanups);
    // A stdio server that prints the header's value on its stderr, which vigil forwards to its own:
    // the value is registered with the scrubber, so the forwarded line shows <redacted>.
    const [program, ...rest] = fixtureArgv();
    const noisy = { name: "noisy", transport: "stdio", command: "/bin/sh", args: ["-c", `echo "noisy: token ${OTEL_TOKEN}" >&2; exec "$$0" "$$@"`, program, ...rest] };
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [noisy],
      knobs: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/custom/traces`, OTEL_EXPORTER_OTLP_TRACES_HEADERS: `x-api-key=${OTEL_TOKEN}` },
    });
    const serve = StdioServe.start(cleanups, env, "solo");
    await serve.client.waitForStderr("noisy: token <redacted>", 15_000);
    await serve.command({ type: "prompt", id: "p1", message: PROMPT_TEXT });
    await serve.until(isRunEnd);
    serve.client.closeStdin();
    expect(await serve.client.exited(15_000)).toEqual({ code: 0, signal: null });
    // The export delay (2 s) has not passed for the run's spans: they went out with the exit's flush.
    const spans = receiver.spans();
    const run = named(spans, "invoke_agent vigil")[0]!;
    expect(attrs(run)).toMatchObject({ "vigil.session": "solo", "vigil.run.status": "ok" });
    expect(run.resource).toMatchObject({ "service.name": "vigil" });
    expect(childrenOf(spans, run).map((s) => s.name)).toEqual(["chat mock-model"]);
    for (const r of receiver.requests) {
      expect(r.path).toBe("/custom/traces");
      expect(r.headers["x-api-key"]).toBe(OTEL_TOKEN);
      expect(r.body).not.toContain(PROMPT_TEXT);
    }
    expect(serve.client.stderrText()).not.toContain(OTEL_TOKEN);
  });

  for (const [what, knobs] of [
    ["no OTLP endpoint set (the other variables are)", { OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_HEADERS: `authorization=${OTEL_TOKEN}` }],
    ["OTEL_SDK_DISABLED=true", { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "RECEIVER" }],
    ["OTEL_TRACES_EXPORTER=none", { OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "RECEIVER" }],
  ] as const) {
    test(`nothing is sent with ${what}`, async () => {
      const receiver = startOtlpReceiver(cleanups);
      const resolved = Object.fromEntries(Object.entries(knobs).map(([k, v]) => [k, v === "RECEIVER" ? receiver.url : v]));
      // Whatever the test runner's own environment says: these are the variables vigil sees.
      const clear = { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "", OTEL_SDK_DISABLED: "", OTEL_TRACES_EXPORTER: "" };
      const env = await eventsEnvironment(cleanups, { fixtureEnv: false, servers: () => [], knobs: { ...clear, ...resolved } });
      const serve = StdioServe.start(cleanups, env, "quiet");
      await serve.command({ type: "prompt", id: "p1", message: "hello" });
      await serve.until(isRunEnd);
      serve.client.closeStdin();
      expect(await serve.client.exited(15_000)).toEqual({ code: 0, signal: null });
      expect(receiver.requests).toEqual([]);
      expect(serve.client.stderrText()).not.toContain("traces:");
    });
  }

  test("malformed OTEL variables are refused at start (exit 2), naming the variable, never the header value", async () => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [],
      knobs: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${OTEL_TOKEN}%zz` },
    });
    const serve = StdioServe.start(cleanups, env, "refused");
    expect(await serve.client.exited(15_000)).toEqual({ code: 2, signal: null });
    const stderr = serve.client.stderrText();
    expect(stderr).toContain('OTEL_EXPORTER_OTLP_HEADERS: entry 1 ("authorization"): the value is not valid percent-encoding');
    expect(stderr).not.toContain(OTEL_TOKEN);
    expect(serve.frames).toEqual([]);

    const bad = await eventsEnvironment(cleanups, { fixtureEnv: false, servers: () => [], knobs: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" } });
    const serve2 = StdioServe.start(cleanups, bad, "refused");
    expect(await serve2.client.exited(15_000)).toEqual({ code: 2, signal: null });
    expect(serve2.client.stderrText()).toContain("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: expected an http:// or https:// URL");
  });

  test("an unreachable collector: the run and the exit are as without one, one log line says so, no secret in it", async () => {
    // A port that was just free: nothing listens there.
    const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, development: false, fetch: () => new Response() });
    const port = probe.port;
    probe.stop(true);
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [],
      knobs: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${OTEL_TOKEN}`, OTEL_EXPORTER_OTLP_TIMEOUT: "1000" },
    });
    const serve = StdioServe.start(cleanups, env, "lonely");
    for (const id of ["p1", "p2"]) {
      await serve.command({ type: "prompt", id, message: "hello" });
      await serve.until((f) => isRunEnd(f) && serve.count(isRunEnd) === (id === "p1" ? 1 : 2));
    }
    serve.client.closeStdin();
    expect(await serve.client.exited(15_000)).toEqual({ code: 0, signal: null });
    expect(serve.frames.filter(isRunEnd).map((f) => f.status)).toEqual(["ok", "ok"]);
    const stderr = serve.client.stderrText();
    expect(stderr).not.toContain(OTEL_TOKEN);
    // The runs' spans went out at the latest with the exit's flush, and failed: one line (rate-limited) says so.
    const failures = stderr.split("\n").filter((l) => l.includes("traces: export"));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/traces: export to http:\/\/127\.0\.0\.1:\d+\/v1\/traces failed \([A-Za-z0-9_ ]+\)/);
  });
});
