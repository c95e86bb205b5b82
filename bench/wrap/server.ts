/**
 * The benchmark's MCP server: newline-delimited JSON-RPC on stdio, written for speed (no SDK), so
 * that what the harness measures is the hop in front of it, not the server.
 *
 *   bun bench/wrap/server.ts
 *
 * Methods: initialize, ping, tools/list, tools/call with
 *   echo {text}   → one text content item holding `text`
 *   blob {bytes}  → one text content item of `bytes` ASCII bytes (cached per size)
 * Notifications are ignored. Responses are serialized the way the SDK does it, result first and
 * the id last: {"result":…,"jsonrpc":"2.0","id":…}. Exits 0 on stdin EOF, after flushing.
 */

const NEWLINE = 0x0a;
const MAX_LINE_BYTES = 16 * 1024 * 1024;
const MAX_BLOB_BYTES = 64 * 1024 * 1024;

const TOOLS = [
  {
    name: "echo",
    description: "Returns its text",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false },
  },
  {
    name: "blob",
    description: "Returns a text of the given number of bytes",
    inputSchema: {
      type: "object",
      properties: { bytes: { type: "integer", minimum: 0, maximum: MAX_BLOB_BYTES } },
      required: ["bytes"],
      additionalProperties: false,
    },
  },
];

const out = Bun.stdout.writer();
const encoder = new TextEncoder();

/** `{"result":<result>,"jsonrpc":"2.0","id":<id>}\n` */
function respond(id: unknown, resultJson: string): void {
  out.write(`{"result":${resultJson},"jsonrpc":"2.0","id":${JSON.stringify(id)}}\n`);
}

function respondError(id: unknown, code: number, message: string): void {
  out.write(`{"error":${JSON.stringify({ code, message })},"jsonrpc":"2.0","id":${JSON.stringify(id)}}\n`);
}

// The blob response is built once per size: a prefix holding the whole result, then the id.
let blobSize = -1;
let blobPrefix: Uint8Array = new Uint8Array(0);
function respondBlob(id: unknown, bytes: number): void {
  if (bytes !== blobSize) {
    const head = encoder.encode('{"result":{"content":[{"type":"text","text":"');
    const tail = encoder.encode('"}]},"jsonrpc":"2.0","id":');
    const prefix = new Uint8Array(head.length + bytes + tail.length);
    prefix.set(head);
    prefix.fill(0x78, head.length, head.length + bytes); // "x"
    prefix.set(tail, head.length + bytes);
    blobPrefix = prefix;
    blobSize = bytes;
  }
  out.write(blobPrefix);
  out.write(`${JSON.stringify(id)}}\n`);
}

function handle(line: string): void {
  let msg: { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: Record<string, unknown>; protocolVersion?: unknown } };
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (typeof msg !== "object" || msg === null || msg.id === undefined || typeof msg.method !== "string") return;
  const id = msg.id;
  switch (msg.method) {
    case "initialize": {
      const version = typeof msg.params?.protocolVersion === "string" ? msg.params.protocolVersion : "2025-06-18";
      respond(id, JSON.stringify({ protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: "bench-server", version: "1.0.0" } }));
      return;
    }
    case "ping":
      respond(id, "{}");
      return;
    case "tools/list":
      respond(id, JSON.stringify({ tools: TOOLS }));
      return;
    case "tools/call": {
      const name = msg.params?.name;
      const args = msg.params?.arguments ?? {};
      if (name === "echo" && typeof args.text === "string") {
        respond(id, `{"content":[{"type":"text","text":${JSON.stringify(args.text)}}]}`);
        return;
      }
      if (name === "blob" && Number.isInteger(args.bytes) && (args.bytes as number) >= 0 && (args.bytes as number) <= MAX_BLOB_BYTES) {
        respondBlob(id, args.bytes as number);
        return;
      }
      respondError(id, -32602, `bad call to ${String(name)}`);
      return;
    }
    default:
      respondError(id, -32601, "method not found");
  }
}

const reader = Bun.stdin.stream().getReader();
let parts: Uint8Array[] = [];
let partsLength = 0;
let discarding = false;
const decoder = new TextDecoder();

for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  let start = 0;
  for (;;) {
    const nl = value.indexOf(NEWLINE, start);
    if (nl < 0) {
      if (discarding) break;
      const rest = value.subarray(start);
      if (partsLength + rest.length > MAX_LINE_BYTES) {
        discarding = true;
        parts = [];
        partsLength = 0;
      } else if (rest.length > 0) {
        parts.push(rest);
        partsLength += rest.length;
      }
      break;
    }
    if (discarding) discarding = false;
    else if (partsLength === 0) handle(decoder.decode(value.subarray(start, nl)));
    else {
      parts.push(value.subarray(start, nl));
      handle(decoder.decode(Buffer.concat(parts)));
      parts = [];
      partsLength = 0;
    }
    start = nl + 1;
  }
  await out.flush();
}
await out.flush();
process.exit(0);
