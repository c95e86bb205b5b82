// Tool schemas within the model's context (issue 12 item A), against the compiled binary: an MCP
// server listing far more tool schema than the window holds, and a mock model refusing requests
// over the window (default model.context_tokens, 32,000 tokens ≈ 128,000 bytes). The runs succeed,
// no request exceeds the window, descriptions are shortened with a marker, the tools that do not
// fit are left out (logged once, not at every run) and a call to one of them is refused.
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import type { RecordedRequest } from "../fixtures/mock-model.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { fixtureArgv } from "../helpers/fixture.ts";
import { type Frame, SseReader, command, framesUrl, isRunEnd, messagesOf, serveEnvironment, startDaemon } from "../helpers/serve.ts";

const cleanups = e2eSuite();

/** The default window in bytes (32,000 tokens at 4 bytes each). */
const WINDOW_BYTES = 32_000 * 4;
/** 150 tools of 4 KiB descriptions: about 630 KB of schemas, five times the window. */
const BULK = "150x4096";
const LEFT_OUT_LINE = /tools: the schemas of 156 tools take \d+ tokens, over their budget of 8000/g;

interface WireTool { type: string; function: { name: string; description?: string } }
const toolsOf = (r: RecordedRequest) => ((r.body as { tools?: WireTool[] }).tools ?? []).map((t) => t.function);

test("tool schemas over their share of the window: every request fits, the runs succeed, a tool left out cannot be called", async () => {
  const env = await serveEnvironment(cleanups);
  const config = JSON.parse(readFileSync(env.configFile, "utf8"));
  const [cmd, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: env.grandchildFile, FIXTURE_BULK_TOOLS: BULK });
  config.mcp_servers = [{ name: "fx", transport: "stdio", command: cmd, args }];
  writeFileSync(env.configFile, JSON.stringify(config));
  env.model.setMaxRequestBytes(WINDOW_BYTES);
  env.model.script([
    { toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] },
    { toolCalls: [{ name: "fx__bulk_149", arguments: {} }] },
    { text: "first done" },
    { text: "second done" },
  ]);
  const d = await startDaemon(cleanups, env);
  const sse = await SseReader.open(cleanups, framesUrl(d.base, "t"));

  expect((await command(d, "t", { type: "prompt", id: "p1", message: "use the tools" })).body.success).toBe(true);
  const first = await sse.until(isRunEnd, 30_000);
  expect(first.at(-1)).toMatchObject({ type: "run_end", status: "ok" });
  expect((await command(d, "t", { type: "prompt", id: "p2", message: "again" })).body.success).toBe(true);
  await sse.untilNth(isRunEnd, 2, 30_000);
  expect(sse.frames.filter(isRunEnd).map((f) => f.status)).toEqual(["ok", "ok"]);

  const chats = env.model.requests.filter((r) => r.path.endsWith("/chat/completions"));
  expect(chats).toHaveLength(4);
  // Every request within the window, and the model accepted each one.
  for (const r of chats) {
    expect(r.bytes).toBeLessThanOrEqual(WINDOW_BYTES);
    expect(r.outcome).toBe(200);
  }
  // Offered in the order listed: the server's own tools whole, bulk descriptions cut with a marker,
  // the last bulk tools left out.
  const offered = toolsOf(chats[0]!);
  const names = offered.map((t) => t.name);
  expect(names.slice(0, 6)).toEqual(["fx__echo", "fx__read_file", "fx__exec", "fx__delete_all", "fx__big", "fx__slow"]);
  expect(offered[0]!.description).toBe("Returns the given text unchanged.");
  expect(offered.filter((t) => /…\[vigil: \d+ bytes cut\]$/.test(t.description ?? "")).length).toBe(names.length - 6);
  expect(names).not.toContain("fx__bulk_149");
  expect(names.length).toBeGreaterThan(6);
  expect(names.length).toBeLessThan(156);
  for (const r of chats) expect(toolsOf(r).map((t) => t.name)).toEqual(names);

  // The call of a tool that was not offered is refused (the server is never asked); the run goes on.
  const toolResults = sse.frames.filter((f: Frame) => f.type === "tool_result").map((f) => f.is_error);
  expect(toolResults).toEqual([false, true]);
  const refusal = messagesOf(chats[2]).at(-1)!;
  expect(refusal).toMatchObject({ role: "tool" });
  expect(String(refusal.content)).toContain('tool "fx__bulk_149" is not offered in this session');
  // Logged once for the session, not at each of its two runs.
  expect(d.client.stderrText().match(LEFT_OUT_LINE)?.length).toBe(1);
  // It names the first tool left out: the one after the last offered.
  expect(d.client.stderrText()).toContain(`left out, their schemas do not fit what is left (they cannot be called): "fx__bulk_${names.length - 6}" (`);
}, 90_000);
