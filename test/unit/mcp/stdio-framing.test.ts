import { describe, expect, test } from "bun:test";
import {
  DEFAULT_MCP_MAX_MESSAGE_BYTES,
  envMaxMessageBytes,
  envShutdownGraceMs,
  serverEnvironment,
} from "../../../src/mcp/stdio-config.ts";
import { OVERSIZED_RESPONSE_CODE, OutstandingRequests, decodeServerFrame } from "../../../src/mcp/stdio-framing.ts";
import { escapeControls, stderrLineText } from "../../../src/mcp/stdio-stderr.ts";
import { VigilError } from "../../../src/shared/errors.ts";
import { type Frame, LineSplitter } from "../../../src/shared/ndjson/line-splitter.ts";

const enc = new TextEncoder();
const CAP = 256;

function frames(text: string, cap = CAP): Frame[] {
  const splitter = new LineSplitter(cap);
  return [...splitter.push(enc.encode(text)), ...splitter.end()];
}

function decodeOne(text: string, outstanding = new OutstandingRequests()) {
  const [frame] = frames(text);
  return decodeServerFrame(frame!, CAP, outstanding);
}

describe("decodeServerFrame", () => {
  test("a JSON-RPC line becomes a message; a CR before the newline is framing", () => {
    expect(decodeOne('{"jsonrpc":"2.0","id":1,"result":{}}\r\n')).toEqual({
      kind: "message",
      message: { jsonrpc: "2.0", id: 1, result: {} },
    });
    expect(decodeOne('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n').kind).toBe("message");
  });

  test("an events notification takes the light check; one the schema refuses is still skipped", () => {
    const line = '{"jsonrpc":"2.0","method":"notifications/events/event","params":{"eventId":"e1","name":"n","data":{"a":[1]},"cursor":"7","_meta":{"io.modelcontextprotocol/subscriptionId":3}}}\n';
    expect(decodeOne(line)).toEqual({ kind: "message", message: JSON.parse(line) });
    // Strict at the top like the schema: an unknown key, an id, a wrong version, params that are no object.
    expect(decodeOne('{"jsonrpc":"2.0","method":"notifications/events/event","params":{},"x":1}\n')).toMatchObject({ kind: "skipped", reason: "not_jsonrpc" });
    expect(decodeOne('{"jsonrpc":"1.0","method":"notifications/events/event"}\n')).toMatchObject({ kind: "skipped", reason: "not_jsonrpc" });
    expect(decodeOne('{"jsonrpc":"2.0","method":"notifications/events/event","params":[1]}\n')).toMatchObject({ kind: "skipped", reason: "not_jsonrpc" });
    expect(decodeOne('{"jsonrpc":"2.0","method":"notifications/events/event","params":{"_meta":{"progressToken":1.5}}}\n')).toMatchObject({ kind: "skipped", reason: "not_jsonrpc" });
    // A request with an events-like method is the schema's to judge, and it is a request.
    expect(decodeOne('{"jsonrpc":"2.0","id":4,"method":"notifications/events/event"}\n')).toMatchObject({ kind: "message", message: { id: 4 } });
  });

  test("blank lines are ignored without a note", () => {
    expect(decodeOne("\n")).toEqual({ kind: "blank" });
    expect(decodeOne("  \r\n")).toEqual({ kind: "blank" });
  });

  test("non-JSON and non-JSON-RPC lines are skipped; the latter's note carries no content", () => {
    const garbage = decodeOne("npm WARN something\n");
    expect(garbage).toMatchObject({ kind: "skipped", reason: "not_json" });
    expect((garbage as { note: string }).note).toContain("npm WARN something");
    const notRpc = decodeOne('{"id":1,"result":{"secret":"s3cr3t"}}\n');
    expect(notRpc).toMatchObject({ kind: "skipped", reason: "not_jsonrpc" });
    expect((notRpc as { note: string }).note).not.toContain("s3cr3t");
    expect(decodeOne("[1,2]\n")).toMatchObject({ kind: "skipped", reason: "not_jsonrpc" });
  });

  test("an over-cap response to a request in flight becomes an error response for its id", () => {
    const outstanding = new OutstandingRequests();
    outstanding.noteOutgoing({ jsonrpc: "2.0", id: "a-7", method: "tools/call", params: { name: "big" } });
    const line = `{"result":{"text":"${"x".repeat(1000)}"},"jsonrpc":"2.0","id":"a-7"}\n`;
    expect(decodeOne(line, outstanding)).toMatchObject({
      kind: "replaced",
      message: { jsonrpc: "2.0", id: "a-7", error: { code: OVERSIZED_RESPONSE_CODE, message: `response larger than ${CAP} bytes` } },
    });
    const idFirst = `{"jsonrpc":"2.0","id":"a-7","result":{"text":"${"x".repeat(1000)}"}}\n`;
    expect(decodeOne(idFirst, outstanding).kind).toBe("replaced");
  });

  test("an over-cap line with no recoverable id, or an id not in flight, is dropped", () => {
    const outstanding = new OutstandingRequests();
    outstanding.add(1);
    expect(decodeOne(`${"y".repeat(1000)}\n`, outstanding)).toMatchObject({ kind: "skipped", reason: "oversized" });
    // The same value with another JSON type is another id.
    expect(decodeOne(`{"result":"${"x".repeat(1000)}","jsonrpc":"2.0","id":"1"}\n`, outstanding)).toMatchObject({ kind: "skipped" });
    expect(decodeOne(`{"result":"${"x".repeat(1000)}","jsonrpc":"2.0","id":2}\n`, outstanding)).toMatchObject({ kind: "skipped" });
  });
});

describe("OutstandingRequests", () => {
  test("requests open an entry; responses and cancellations settle it; notifications do nothing", () => {
    const o = new OutstandingRequests();
    o.noteOutgoing({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    o.noteOutgoing({ jsonrpc: "2.0", id: 2, method: "tools/call" });
    o.noteOutgoing({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(o.size).toBe(2);
    o.noteIncoming({ jsonrpc: "2.0", id: 1, result: {} });
    expect(o.has(1)).toBe(false);
    o.noteOutgoing({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } });
    expect(o.size).toBe(0);
    // A server request with our id value is not a response.
    o.add(3);
    o.noteIncoming({ jsonrpc: "2.0", id: 3, method: "sampling/createMessage" });
    expect(o.has(3)).toBe(true);
  });
});

describe("stderr lines", () => {
  test("control characters are escaped; over-long lines are cut with their length", () => {
    expect(escapeControls("a\x1b[31mred\x07\tok")).toBe("a\\x1b[31mred\\x07\tok");
    const [line] = frames("warn: \x1b[0m done\r\n", 4096);
    expect(stderrLineText(line!)).toBe("warn: \\x1b[0m done");
    const [empty] = frames("\n", 4096);
    expect(stderrLineText(empty!)).toBeNull();
    const [long] = frames(`${"z".repeat(10_000)}\n`, 4096);
    const text = stderrLineText(long!)!;
    expect(text.length).toBeLessThan(4200);
    expect(text).toEndWith("… (line of 10000 bytes cut)");
  });
});

describe("configuration", () => {
  test("knobs default, accept integers in range, and refuse anything else", () => {
    expect(envMaxMessageBytes({})).toBe(DEFAULT_MCP_MAX_MESSAGE_BYTES);
    expect(envMaxMessageBytes({ VIGIL_MCP_MAX_MESSAGE_BYTES: "65536" })).toBe(65536);
    expect(envShutdownGraceMs({})).toBe(3000);
    expect(envShutdownGraceMs({ VIGIL_SHUTDOWN_GRACE_MS: "0" })).toBe(0);
    for (const bad of ["12", "1e6", "-1", "lots", "99999999999"]) {
      expect(() => envMaxMessageBytes({ VIGIL_MCP_MAX_MESSAGE_BYTES: bad })).toThrow(VigilError);
    }
    expect(() => envShutdownGraceMs({ VIGIL_SHUTDOWN_GRACE_MS: "600001" })).toThrow("VIGIL_SHUTDOWN_GRACE_MS must be an integer");
  });

  test("a server inherits only non-secret variables, plus its configured env", () => {
    const parent = { PATH: "/bin", HOME: "/h", OPENAI_API_KEY: "sk-1", TICKETS_TOKEN: "t", SHELL: "() { :; }" };
    expect(serverEnvironment({ FOO: "bar", HOME: "/srv" }, parent)).toEqual({ PATH: "/bin", HOME: "/srv", FOO: "bar" });
  });
});
