import { describe, expect, test } from "bun:test";
import { type Command, COMMAND_TYPES, PROTOCOL_LIMITS } from "../../../src/serve/protocol/commands.ts";
import { parseCommand } from "../../../src/serve/protocol/parse-command.ts";

const ok = (input: string | Uint8Array): Command => {
  const r = parseCommand(input);
  if (!r.ok) throw new Error(`refused: ${JSON.stringify(r.response)}`);
  return r.command;
};
const refused = (input: string | Uint8Array, options?: { maxBytes?: number }) => {
  const r = parseCommand(input, options);
  if (r.ok) throw new Error(`accepted: ${JSON.stringify(r.command)}`);
  return r.response;
};
const j = (x: unknown) => JSON.stringify(x);

describe("parseCommand: every command parses", () => {
  const cases: Record<(typeof COMMAND_TYPES)[number], Record<string, unknown>[]> = {
    prompt: [
      { type: "prompt", id: "p1", message: "hello" },
      { type: "prompt", id: 7, message: "x", streaming_behavior: "follow_up" },
      { type: "prompt", id: -1.5, message: "x", streaming_behavior: "steer" },
    ],
    abort: [{ type: "abort", id: "a" }],
    get_state: [{ type: "get_state", id: 0 }],
    get_transcript: [{ type: "get_transcript", id: "t" }, { type: "get_transcript", id: "t", since: 0, limit: 100 }],
    mcp_events_list: [{ type: "mcp_events_list", id: "l" }, { type: "mcp_events_list", id: "l", server: "tickets" }],
    mcp_events_subscribe: [
      { type: "mcp_events_subscribe", id: "s", server: "tickets", name: "ticket.updated" },
      {
        type: "mcp_events_subscribe", id: "s", server: "tickets", name: "ticket.updated", arguments: { project: "alpha" },
        delivery: "webhook", action: "steer", instructions: "triage", max_age_ms: 60000,
      },
    ],
    mcp_events_unsubscribe: [
      { type: "mcp_events_unsubscribe", id: "u", server: "tickets", name: "ticket.updated" },
      { type: "mcp_events_unsubscribe", id: "u", server: "tickets", name: "ticket.updated", arguments: {} },
    ],
  };
  for (const [type, inputs] of Object.entries(cases)) {
    test(type, () => {
      for (const input of inputs) expect(ok(j(input))).toEqual(input as Command);
    });
  }

  test("bytes input and the id bounds", () => {
    expect(ok(new TextEncoder().encode(j({ type: "abort", id: "é" })))).toEqual({ type: "abort", id: "é" });
    expect(ok(j({ type: "abort", id: "x".repeat(128) })).id).toHaveLength(128);
    expect(refused(j({ type: "abort", id: "x".repeat(129) })).error.code).toBe("invalid_command");
    expect(refused(j({ type: "abort", id: "" })).error.message).toStartWith("id: expected a string of 1 to 128");
    expect(refused(j({ type: "abort", id: true })).id).toBeNull();
  });
});

describe("parseCommand: refusals", () => {
  test("not JSON", () => {
    const r = refused("{nope");
    expect(r).toMatchObject({ type: "response", id: null, command: null, success: false, error: { code: "invalid_json" } });
    expect(r.error.message).toStartWith("not valid JSON: ");
  });

  test("invalid UTF-8 bytes", () => {
    expect(refused(new Uint8Array([0x7b, 0xff, 0x7d])).error.code).toBe("invalid_json");
  });

  test("duplicate key, with the leading id recovered", () => {
    const r = refused('{"type":"prompt","id":"p9","message":"a","message":"b"}');
    expect(r).toMatchObject({ id: "p9", command: "prompt", error: { code: "invalid_json" } });
    expect(r.error.message).toContain('duplicate key "message"');
  });

  test("too deep", () => {
    const deep = `{"type":"prompt","id":1,"message":"m","x":${"[".repeat(40)}${"]".repeat(40)}}`;
    const r = refused(deep);
    expect(r.error.code).toBe("invalid_json");
    expect(r.error.message).toContain("nesting deeper than 32");
    expect(r.id).toBe(1);
  });

  test("an array, a scalar, null", () => {
    expect(refused("[1]").error).toEqual({ code: "invalid_command", message: "expected a JSON object, got an array" });
    expect(refused("3").error.message).toBe("expected a JSON object, got number");
    expect(refused("null").error.message).toBe("expected a JSON object, got null");
  });

  test("unknown type, missing type, non-string type", () => {
    const r = refused(j({ type: "launch", id: "q" }));
    expect(r).toMatchObject({ id: "q", command: null, error: { code: "unknown_command", message: 'type: unknown command "launch"' } });
    expect(refused(j({ id: "q" })).error).toEqual({ code: "invalid_command", message: "type: required key is missing" });
    expect(refused(j({ id: "q", type: 3 })).error.message).toBe("type: expected a string");
  });

  test("unknown key names its path", () => {
    const r = refused(j({ type: "abort", id: "a1", force: true }));
    expect(r).toMatchObject({ id: "a1", command: "abort", error: { code: "invalid_command", message: "force: unknown key" } });
  });

  test("missing id", () => {
    const r = refused(j({ type: "get_state" }));
    expect(r).toMatchObject({ id: null, command: "get_state", error: { code: "invalid_command", message: "id: required key is missing" } });
  });

  test("missing and empty message", () => {
    expect(refused(j({ type: "prompt", id: 1 })).error.message).toBe("message: required key is missing");
    expect(refused(j({ type: "prompt", id: 1, message: "" })).error.message).toBe("message: expected a non-empty string");
  });

  test("message too long (the text is never echoed)", () => {
    const secret = "SECRET-".repeat(Math.ceil(PROTOCOL_LIMITS.messageChars / 7) + 1);
    const r = refused(j({ type: "prompt", id: "big", message: secret }), { maxBytes: 4 * 1024 * 1024 });
    expect(r).toMatchObject({ id: "big", command: "prompt", error: { code: "invalid_command" } });
    expect(r.error.message).toBe(`message: expected at most ${PROTOCOL_LIMITS.messageChars} characters`);
    expect(JSON.stringify(r)).not.toContain("SECRET");
  });

  test("the message text never appears in any error", () => {
    const inputs = [
      { type: "prompt", id: 1, message: "SECRET-TEXT", streaming_behavior: "later" },
      { type: "prompt", id: 1, message: "SECRET-TEXT", extra: 1 },
      { type: "prompt", id: [], message: "SECRET-TEXT" },
      { type: "prompt", id: 1, message: ["SECRET-TEXT"] },
      { type: "abort", id: 1, message: "SECRET-TEXT" },
    ];
    for (const input of inputs) {
      const r = refused(j(input));
      expect(r.error.message).not.toContain("SECRET-TEXT".slice(0, 6));
    }
    expect(refused('{"type":"prompt","id":1,"message":"SECRET-TEXT"').error.message).not.toContain("SECRET");
    // An unknown type is named (bounded), since it is the client's own command name.
    expect(refused(j({ type: "t".repeat(100), id: 1 })).error.message).toBe(`type: unknown command "${"t".repeat(40)}…"`);
  });

  test("bad since", () => {
    for (const since of [-1, 1.5, "3", 2 ** 60]) {
      const r = refused(j({ type: "get_transcript", id: "t", since }));
      expect(r).toMatchObject({ id: "t", command: "get_transcript", error: { code: "invalid_command" } });
      expect(r.error.message).toStartWith("since: expected an integer from 0 to ");
    }
    expect(refused(j({ type: "get_transcript", id: "t", limit: 0 })).error.message).toStartWith("limit: expected an integer from 1 to 10000");
  });

  test("bad delivery, action, arguments, server, instructions", () => {
    const base = { type: "mcp_events_subscribe", id: "s", server: "tickets", name: "e" };
    expect(refused(j({ ...base, delivery: "email" })).error).toEqual({
      code: "invalid_command",
      message: 'delivery: expected "poll" | "push" | "webhook"',
    });
    expect(refused(j({ ...base, action: "shout" })).error.message).toBe('action: expected "notify" | "follow_up" | "steer"');
    expect(refused(j({ ...base, arguments: [1] })).error.message).toBe("arguments: expected an object");
    expect(refused(j({ ...base, server: "a b" })).error.message).toStartWith("server: expected a server name");
    expect(refused(j({ ...base, instructions: "x".repeat(4097) })).error.message).toBe("instructions: expected at most 4096 characters");
    expect(refused(j({ ...base, max_age_ms: 0 })).error.message).toStartWith("max_age_ms: expected an integer from 1");
    const { server: _server, ...noServer } = base;
    expect(refused(j({ ...noServer, type: "mcp_events_unsubscribe" })).error.message).toBe("server: required key is missing");
  });

  test("several problems in one line", () => {
    const r = refused(j({ type: "mcp_events_subscribe", id: "s", delivery: "x" }));
    expect(r.error.message).not.toContain("\n");
    expect(r.error.message).toContain("server: required key is missing");
    expect(r.error.message).toContain("name: required key is missing");
  });

  test("too large: refused unread, id recovered from the head", () => {
    const big = j({ type: "prompt", id: "huge", message: "SECRET".repeat(200_000) });
    const r = refused(big);
    expect(r).toMatchObject({ id: "huge", command: "prompt", error: { code: "too_large" } });
    expect(r.error.message).toBe(`command is ${big.length} bytes, over the 1048576-byte limit`);
    const multibyte = j({ id: 5, type: "prompt", message: "é".repeat(600_000) });
    expect(multibyte.length).toBeLessThan(1024 * 1024);
    expect(refused(multibyte)).toMatchObject({ id: 5, command: "prompt", error: { code: "too_large" } });
  });

  test("a nested id is never recovered from a line that did not parse", () => {
    expect(refused('{"x":{"id":"inner"},"type":"abort"').id).toBeNull();
  });
});
