/**
 * `vigil policy pin -- CMD`: start a server, list its tools, and produce a `pins:` block with the
 * digest of each tool's definition. The command prints the block; nothing here writes stdout.
 */
import * as v from "valibot";
import { VERSION } from "../shared/build-info.ts";
import { VigilError } from "../shared/errors.ts";
import { spawnGroup, sweepGroup, type GroupChild } from "../shared/process-group.ts";
import { within } from "../shared/time.ts";
import { StdioRpcClient } from "./stdio-rpc.ts";
import { toolDefinitionDigest } from "../policy/tool-definition.ts";

export const PIN_PROTOCOL_VERSION = "2025-11-25";
/** A server that paginates forever (or loops on a cursor) is cut off here. */
export const MAX_TOOLS_LIST_PAGES = 100;
const MAX_LINE_BYTES = 32 * 1024 * 1024;
const STDERR_TAIL_BYTES = 8192;
/** After the sweep, how long stderr may take to reach EOF before an error quotes what arrived. */
const STDERR_SETTLE_MS = 500;

export interface PinOptions {
  /** Bound on each wait for a response. Default 10000. */
  timeoutMs?: number;
  /** How long the server gets to exit after its stdin closes, before its group is signalled. Default 3000. */
  graceMs?: number;
}

const ToolsListResult = v.looseObject({
  tools: v.array(v.looseObject({ name: v.string() })),
  nextCursor: v.optional(v.string()),
});

/**
 * Lists the server's tools (following nextCursor) and returns name → "sha256:<hex>" in listing
 * order. The server's process group is always swept before this returns or throws.
 * Throws VigilError("spawn_failed") if CMD cannot start, VigilError("server_unreachable") otherwise.
 */
export async function pinServer(argv: string[], options: PinOptions = {}): Promise<Map<string, string>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const graceMs = options.graceMs ?? 3000;
  if (argv.length === 0) throw new VigilError("usage", "no server command given");
  const child = spawnGroup(argv, { stderr: "pipe" });
  const stderr = drainTail(child);
  const rpc = new StdioRpcClient(child, { timeoutMs, maxLineBytes: MAX_LINE_BYTES });
  let failure: unknown = null;
  try {
    await rpc.request("initialize", {
      protocolVersion: PIN_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "vigil-pin", version: VERSION },
    });
    rpc.notify("notifications/initialized");
    return await listAllTools(rpc);
  } catch (e) {
    failure = e;
  } finally {
    rpc.closeStdin();
    await sweepGroup(child, graceMs);
  }
  // The group is gone, so stderr ends soon: let the drain catch up before quoting it.
  await within(stderr.done, STDERR_SETTLE_MS);
  throw withStderrHint(failure, stderr.lastLine());
}

function withStderrHint(failure: unknown, lastLine: string | null): unknown {
  if (!(failure instanceof VigilError) || failure.code !== "server_unreachable" || lastLine === null) return failure;
  if (failure.hint !== undefined) return failure;
  return new VigilError(failure.code, failure.message, { hint: `last line of the server's stderr: ${lastLine}`, cause: failure });
}

async function listAllTools(rpc: StdioRpcClient): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOLS_LIST_PAGES; page++) {
    const raw = await rpc.request("tools/list", cursor === undefined ? {} : { cursor });
    const parsed = v.safeParse(ToolsListResult, raw);
    if (!parsed.success) {
      throw new VigilError("server_unreachable", `server's tools/list result (page ${page + 1}) is not a valid list of tools`);
    }
    for (const tool of parsed.output.tools) {
      const digest = toolDefinitionDigest(tool);
      const earlier = digests.get(tool.name);
      if (earlier !== undefined && earlier !== digest) {
        throw new VigilError("server_unreachable", `server listed tool ${JSON.stringify(tool.name)} twice with different definitions`);
      }
      digests.set(tool.name, digest);
    }
    cursor = parsed.output.nextCursor;
    if (cursor === undefined) return digests;
  }
  throw new VigilError("server_unreachable", `server's tools/list did not end within ${MAX_TOOLS_LIST_PAGES} pages`);
}

/** Reads the child's stderr to the end (so it never blocks on a full pipe), keeping only a bounded tail. */
function drainTail(child: GroupChild): { done: Promise<void>; lastLine(): string | null } {
  let tail = Buffer.alloc(0);
  const stream = child.stderr as ReadableStream<Uint8Array>;
  const done = (async () => {
    try {
      for await (const chunk of stream) {
        tail = Buffer.concat([tail, chunk]);
        if (tail.length > STDERR_TAIL_BYTES) tail = tail.subarray(tail.length - STDERR_TAIL_BYTES);
      }
    } catch {
      // the stream errored as the process went away: the tail so far is all there is
    }
  })();
  return {
    done,
    lastLine() {
      const lines = tail.toString("utf8").split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
      const last = lines[lines.length - 1];
      return last === undefined ? null : JSON.stringify(last.slice(0, 200));
    },
  };
}

// Plain YAML keys that need no quotes; everything else (and anything YAML 1.1 or 1.2 would read as
// a bool, null or number) is written as a JSON string, which is valid double-quoted YAML.
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const RESERVED_PLAIN = /^(?:true|false|yes|no|on|off|y|n|null|nan|inf)$/i;

/** A `pins:` block for a policy file, tools sorted by name, one line each. */
export function renderPinsYaml(pins: ReadonlyMap<string, string>): string {
  if (pins.size === 0) return "pins: {}\n";
  const names = [...pins.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const lines = names.map((name) => `  ${yamlKey(name)}: ${JSON.stringify(pins.get(name))}`);
  return `pins:\n${lines.join("\n")}\n`;
}

function yamlKey(name: string): string {
  return PLAIN_KEY.test(name) && !RESERVED_PLAIN.test(name) ? name : JSON.stringify(name);
}
