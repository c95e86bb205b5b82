/**
 * `make demo`: runs examples/notes-server.ts behind the compiled `dist/vigil wrap` with
 * examples/policy.yaml, drives it with the MCP SDK client, then shows the capture vigil wrote.
 *
 *   bun scripts/demo.ts          (after `make build`)
 *
 * Exits 1 when anything differs from what the policy and wrap.md promise, so it doubles as a smoke
 * test of the release binary.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const ROOT = resolve(import.meta.dir, "..");
const VIGIL = join(ROOT, "dist/vigil");
const CALL_TIMEOUT_MS = 10_000;
// wrap's default shutdown grace (3 s) plus its TERM and KILL sweeps (2 s each), with headroom.
const EXIT_TIMEOUT_MS = 15_000;
const STDERR_KEEP_CHARS = 64 * 1024;
const SECRET_ARGUMENT = "../etc/passwd";

/**
 * The SDK's StdioClientTransport would do, except that it hides the child's exit status, which the
 * demo must check; this one keeps it, and bounds every wait.
 */
class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  stderr = "";
  private proc: ReturnType<typeof spawnPiped> | undefined;

  constructor(private readonly argv: string[]) {}

  async start(): Promise<void> {
    const proc = spawnPiped(this.argv);
    this.proc = proc;
    const buffer = new ReadBuffer();
    void this.pump(proc.stdout, (chunk) => {
      buffer.append(Buffer.from(chunk));
      for (;;) {
        let msg: JSONRPCMessage | null;
        try {
          msg = buffer.readMessage();
        } catch (e) {
          // The bad line is already consumed: report it and keep reading, as a host would.
          this.onerror?.(e instanceof Error ? e : new Error(String(e)));
          continue;
        }
        if (msg === null) break;
        this.onmessage?.(msg);
      }
    });
    const decoder = new TextDecoder();
    void this.pump(proc.stderr, (chunk) => {
      this.stderr = (this.stderr + decoder.decode(chunk, { stream: true })).slice(-STDERR_KEEP_CHARS);
    });
    void proc.exited.then(() => this.onclose?.());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.proc) throw new Error("transport not started");
    this.proc.stdin.write(serializeMessage(message));
    await this.proc.stdin.flush();
  }

  /** Ends the session the way an MCP host does: EOF on vigil's stdin, then a bounded wait. */
  async close(): Promise<void> {
    if (!this.proc) return;
    try {
      this.proc.stdin.end();
    } catch {
      // vigil already exited
    }
    const exited = await Promise.race([this.proc.exited.then(() => true), Bun.sleep(EXIT_TIMEOUT_MS).then(() => false)]);
    if (!exited) {
      this.proc.kill("SIGKILL");
      throw new Error(`vigil did not exit within ${EXIT_TIMEOUT_MS} ms of stdin EOF`);
    }
  }

  exitStatus(): string {
    const p = this.proc;
    if (!p) return "not started";
    return p.signalCode ? `signal ${p.signalCode}` : `exit code ${p.exitCode}`;
  }

  exitCode(): number | null {
    return this.proc?.exitCode ?? null;
  }

  private async pump(stream: ReadableStream<Uint8Array>, take: (chunk: Uint8Array) => void): Promise<void> {
    try {
      for await (const chunk of stream) take(chunk);
    } catch (e) {
      this.onerror?.(e instanceof Error ? e : new Error(String(e)));
    }
  }
}

function spawnPiped(argv: string[]) {
  return Bun.spawn(argv, { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
}

const problems: string[] = [];
function expectThat(ok: boolean, what: string): void {
  console.log(`  ${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) problems.push(what);
}

interface ToolResult {
  isError?: boolean;
  content?: Array<{ type: string; text?: string }>;
  structuredContent?: { vigil?: { decision?: string; error_code?: string } };
}

const firstText = (r: ToolResult) => r.content?.find((c) => c.type === "text")?.text ?? "";
const brief = (s: string) => (s.length > 100 ? `${s.slice(0, 100)}…` : s).replaceAll("\n", " | ");

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const result = (await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS })) as ToolResult;
  console.log(`\n→ tools/call ${name} ${JSON.stringify(args)}`);
  console.log(`  ${result.isError ? "error" : "result"}: ${brief(firstText(result))}`);
  return result;
}

function expectDenied(result: ToolResult, code: string): void {
  const vigil = result.structuredContent?.vigil;
  expectThat(result.isError === true && vigil?.decision === "deny", "denied by vigil, never reached the server");
  expectThat(vigil?.error_code === code, `error code ${code} (got ${vigil?.error_code})`);
}

async function drive(client: Client): Promise<void> {
  const { tools } = await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
  const names = tools.map((t) => t.name);
  console.log(`\n→ tools/list: ${names.join(", ")}`);
  expectThat(!names.includes("delete_notes") && names.includes("read_note"), "delete_notes is hidden (hide_denied)");

  const allowed = await call(client, "read_note", { name: "welcome" });
  expectThat(!allowed.isError && firstText(allowed).startsWith("Welcome"), "allowed call reached the server");

  expectDenied(await call(client, "delete_notes", {}), "E_TOOL_DENIED");
  expectDenied(await call(client, "read_note", { name: SECRET_ARGUMENT }), "E_ARG_SCHEMA");
}

type Json = Record<string, unknown>;

function readJsonLines(file: string): Json[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Json);
}

function showCapture(dir: string): void {
  console.log(`\nCapture: ${dir}`);
  const files = readdirSync(dir).sort();
  for (const f of files) console.log(`  ${String(statSync(join(dir, f)).size).padStart(8)}  ${f}`);
  for (const f of ["capture.json", "session-context.json", "session-stop.json", "decisions.ndjson", "receipts.ndjson"]) {
    expectThat(files.includes(f), `${f} written`);
  }

  const decisionsFile = join(dir, "decisions.ndjson");
  const decisions = existsSync(decisionsFile) ? readJsonLines(decisionsFile).map((e) => (e.data ?? {}) as Json) : [];
  console.log("\nDecision log (decisions.ndjson):");
  const columns = ["seq", "tool", "decision", "reason_code", "reason"] as const;
  const widths = [4, 14, 10, 22];
  console.log(`  ${columns.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" ")}`);
  for (const d of decisions) console.log(`  ${columns.map((c, i) => String(d[c] ?? "").padEnd(widths[i] ?? 0)).join(" ")}`);
  expectThat(
    decisions.map((d) => `${d.tool}:${d.decision}`).join(",") === "read_note:allow,delete_notes:deny,read_note:deny",
    "one decision per call, in order: allow, deny, deny",
  );

  const stopFile = join(dir, "session-stop.json");
  if (existsSync(stopFile)) {
    const stop = ((JSON.parse(readFileSync(stopFile, "utf8")) as Json).data ?? {}) as Json;
    console.log("\nSession stop (session-stop.json):");
    const keys = ["session_end", "termination", "exit_code", "decision_log", "decision_events_written",
      "decision_events_dropped", "decision_prefix_sha256"];
    for (const k of keys) console.log(`  ${k.padEnd(24)} ${JSON.stringify(stop[k])}`);
    expectThat(stop.session_end === "client_closed" && stop.decision_log === "complete", "session closed cleanly, log complete");
    const digest = existsSync(decisionsFile) ? createHash("sha256").update(readFileSync(decisionsFile)).digest("hex") : "";
    expectThat(stop.decision_prefix_sha256 === digest, "decision_prefix_sha256 = SHA-256 of decisions.ndjson");
  }

  const leaked = files.filter((f) => readFileSync(join(dir, f), "utf8").includes(SECRET_ARGUMENT));
  const where = leaked.length > 0 ? ` (found in ${leaked.join(", ")})` : "";
  expectThat(leaked.length === 0, `raw argument ${JSON.stringify(SECRET_ARGUMENT)} is in no capture file${where}`);
}

async function main(): Promise<void> {
  if (!existsSync(VIGIL)) {
    console.error(`demo: ${VIGIL} not found; run \`make build\` first`);
    process.exit(1);
  }
  const captureDir = join(mkdtempSync(join(tmpdir(), "vigil-demo-")), "capture");
  // process.execPath: the Bun that runs this script, so the demo needs nothing the repo did not install.
  const argv = [VIGIL, "wrap", "--policy", join(ROOT, "examples/policy.yaml"), "--capture-dir", captureDir,
    "--event-source", "vigil://demo/notes", "--server-id", "notes", "--", process.execPath, join(ROOT, "examples/notes-server.ts")];
  console.log(`$ ${argv.map((a) => (a.includes(" ") ? JSON.stringify(a) : a)).join(" ")}`);

  const transport = new ProcessTransport(argv);
  const client = new Client({ name: "vigil-demo", version: "1.0.0" });
  client.onerror = (e) => problems.push(`client saw a bad message: ${e.message}`);
  try {
    await client.connect(transport, { timeout: CALL_TIMEOUT_MS });
    await drive(client);
  } catch (e) {
    problems.push(`session failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    await client.close();
  } catch (e) {
    problems.push(e instanceof Error ? e.message : String(e));
  }
  console.log(`\nvigil ended: ${transport.exitStatus()}`);
  expectThat(transport.exitCode() === 0, "vigil exited 0 (the notes server's own exit code)");

  try {
    if (existsSync(captureDir)) showCapture(captureDir);
    else problems.push(`no capture directory at ${captureDir}`);
  } catch (e) {
    problems.push(`capture unreadable: ${e instanceof Error ? e.message : String(e)}`);
  }

  if (transport.stderr.trim() !== "") {
    console.log("\nvigil's stderr (includes the server's, teed to server-stderr.log):");
    for (const line of transport.stderr.trimEnd().split("\n")) console.log(`  | ${line}`);
  }
  if (existsSync(captureDir)) {
    // The auditor's view: verify reads the capture offline and says whether its ending is recorded.
    console.log(`\nvigil verify ${captureDir}:`);
    const verify = Bun.spawnSync([VIGIL, "verify", captureDir], { stdout: "pipe", stderr: "pipe" });
    for (const line of verify.stdout.toString().trimEnd().split("\n")) console.log(`  | ${line}`);
    expectThat(verify.exitCode === 0, "verify says closed (exit 0)");
  }
  if (problems.length > 0) {
    console.log(`\ndemo: ${problems.length} unexpected:`);
    for (const p of problems) console.log(`  - ${p}`);
    process.exit(1);
  }
  console.log(`\ndemo: all as expected. The capture stays in ${captureDir}`);
}

await main();
