import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { VigilError } from "../../../src/shared/errors.ts";
import { loadServeConfig, parseServeConfig, resolveConfigPath } from "../../../src/serve/config/load.ts";
import { CONFIG_LIMITS } from "../../../src/serve/config/schema.ts";

const FIXTURES = join(import.meta.dir, "../../fixtures/configs");
const dir = mkdtempSync(join(tmpdir(), "vigil-serve-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENV = { OPENAI_API_KEY: "k", TICKETS_TOKEN: "t0ken-value" };

function write(name: string, content: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** A small valid config; tests mutate a fresh copy. */
function base(): Record<string, any> {
  return {
    model: { provider: "openai", base_url: "http://127.0.0.1:9/v1", model: "m" },
    mcp_servers: [
      { name: "web", transport: "http", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer x" } },
      { name: "fs", transport: "stdio", command: "srv", events: [{ name: "file.changed" }] },
    ],
  };
}

function parse(doc: unknown, env: Record<string, string> = ENV) {
  return parseServeConfig(typeof doc === "string" ? doc : JSON.stringify(doc), { source: "t.json", env, baseDir: dir });
}

/** The config_invalid message for a document that must be refused. */
function refusal(doc: unknown, env: Record<string, string> = ENV): string {
  try {
    parse(doc, env);
  } catch (e) {
    if (!(e instanceof VigilError)) throw e;
    expect(e.code).toBe("config_invalid");
    expect(e.exitCode).toBe(2);
    return e.message;
  }
  throw new Error("expected a refusal");
}

function mutate(change: (c: Record<string, any>) => void): Record<string, any> {
  const c = base();
  change(c);
  return c;
}

describe("the serve.md §2 example", () => {
  test("loads, with defaults applied and relative paths resolved", async () => {
    const config = await loadServeConfig(join(FIXTURES, "serve-example.json"), ENV);
    expect(config.model).toEqual({
      provider: "openai", base_url: "http://127.0.0.1:11434/v1", model: "qwen3",
      api_key_env: "OPENAI_API_KEY", max_turns: 8, timeout_ms: 120000,
    });
    expect(config.policy).toBe(resolve(FIXTURES, "policy.yaml"));
    expect(config.evidence).toEqual({ event_source: "vigil://host/agent", decision_log: true });
    const [tickets, fs] = config.mcp_servers;
    expect(tickets).toMatchObject({ name: "tickets", transport: "http", headers: { Authorization: "Bearer t0ken-value" } });
    expect(tickets!.events).toEqual([{
      name: "ticket.updated", arguments: { project: "alpha" }, delivery: "webhook", action: "follow_up",
      instructions: "Triage it; page me only for P1.", max_age_ms: 3600000,
    }]);
    expect(fs).toEqual({
      name: "fs", transport: "stdio", command: "npx",
      args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"], env: {},
    });
  });

  test("the command model form loads with its default timeout", async () => {
    const config = await loadServeConfig(join(FIXTURES, "command-model.json"), {});
    expect(config.model).toEqual({ provider: "command", command: ["claude", "-p"], timeout_ms: 600000 });
    expect(config.mcp_servers).toEqual([]);
  });

  test("event defaults: arguments {} and action follow_up; decision_log true", () => {
    const c = parse(mutate((c) => (c.evidence = { event_source: "urn+x://a" })));
    expect(c.mcp_servers[1]!.events![0]).toEqual({ name: "file.changed", arguments: {}, action: "follow_up" });
    expect(c.evidence?.decision_log).toBe(true);
  });
});

describe("refusals name the path", () => {
  const cases: [string, Record<string, any> | string, string][] = [
    ["unknown top-level key", mutate((c) => (c.extra = 1)), "config t.json: extra: unknown key"],
    ["unknown key in model", mutate((c) => (c.model.temperature = 0.2)), "model.temperature: unknown key"],
    ["unknown key in a server", mutate((c) => (c.mcp_servers[0].timeout = 5)), "mcp_servers[0].timeout: unknown key"],
    ["unknown key in an event", mutate((c) => (c.mcp_servers[1].events[0].mode = "poll")), "mcp_servers[1].events[0].mode: unknown key"],
    ["unknown key in evidence", mutate((c) => (c.evidence = { event_source: "a://b", x: 1 })), "evidence.x: unknown key"],
    ["http key on a stdio server", mutate((c) => (c.mcp_servers[1].url = "https://x")), "mcp_servers[1].url: unknown key"],
    ["wrong provider", mutate((c) => (c.model.provider = "anthropic")), 'model.provider: expected "openai" | "command"'],
    ["missing provider", mutate((c) => delete c.model.provider), 'model.provider: expected "openai" | "command"'],
    ["wrong transport", mutate((c) => (c.mcp_servers[0].transport = "sse")), 'mcp_servers[0].transport: expected "http" | "stdio"'],
    ["missing model", mutate((c) => delete c.model), "model: required key is missing"],
    ["missing url", mutate((c) => delete c.mcp_servers[0].url), "mcp_servers[0].url: required key is missing"],
    ["bad base_url", mutate((c) => (c.model.base_url = "localhost:11434")), "model.base_url: expected an http:// or https:// URL"],
    ["non-http url", mutate((c) => (c.mcp_servers[0].url = "ftp://x/mcp")), "mcp_servers[0].url: expected an http:// or https:// URL"],
    ["url with a space", mutate((c) => (c.mcp_servers[0].url = "https://x/ mcp")), "mcp_servers[0].url: expected an http:// or https:// URL"],
    ["duplicate server names", mutate((c) => (c.mcp_servers[1].name = "web")), "mcp_servers[1].name: duplicate server name"],
    ["bad server name", mutate((c) => (c.mcp_servers[0].name = "my server")), "mcp_servers[0].name: expected a server name matching [A-Za-z0-9_-]{1,64}"],
    ["long server name", mutate((c) => (c.mcp_servers[0].name = "a".repeat(65))), "mcp_servers[0].name: expected at most 64 characters"],
    ["server name with __", mutate((c) => (c.mcp_servers[0].name = "a__b")), 'mcp_servers[0].name: expected a server name without "__"'],
    ["server name ending in _", mutate((c) => (c.mcp_servers[0].name = "a_")), 'mcp_servers[0].name: expected a server name without "__"'],
    ["bad delivery", mutate((c) => (c.mcp_servers[1].events[0].delivery = "sse")), 'mcp_servers[1].events[0].delivery: expected "poll" | "push" | "webhook"'],
    ["bad action", mutate((c) => (c.mcp_servers[1].events[0].action = "wake")), 'mcp_servers[1].events[0].action: expected "notify" | "follow_up" | "steer"'],
    ["long instructions", mutate((c) => (c.mcp_servers[1].events[0].instructions = "x".repeat(4097))), "mcp_servers[1].events[0].instructions: expected at most 4096 characters"],
    ["zero max_age_ms", mutate((c) => (c.mcp_servers[1].events[0].max_age_ms = 0)), "mcp_servers[1].events[0].max_age_ms: expected an integer from 1"],
    ["arguments not a mapping", mutate((c) => (c.mcp_servers[1].events[0].arguments = [1])), "mcp_servers[1].events[0].arguments: expected a mapping"],
    ["duplicate subscription", mutate((c) => c.mcp_servers[1].events.push({ name: "file.changed", arguments: {} })), "mcp_servers[1].events[1]: duplicate subscription"],
    ["non-string header", mutate((c) => (c.mcp_servers[0].headers.Authorization = 42)), "mcp_servers[0].headers.Authorization: expected a string"],
    ["header with a line break", mutate((c) => (c.mcp_servers[0].headers["X-A"] = "a\r\nb")), "mcp_servers[0].headers.X-A: expected a string without line breaks"],
    ["header names differing by case", mutate((c) => (c.mcp_servers[0].headers.authorization = "y")), "mcp_servers[0].headers: expected header names that differ other than by case"],
    ["bad header name", mutate((c) => (c.mcp_servers[0].headers["a b"] = "v")), 'mcp_servers[0].headers["a b"]: expected an HTTP header name'],
    ["reserved header key", '{"model":{"provider":"command","command":["x"]},"mcp_servers":[{"name":"a","transport":"http","url":"http://h","headers":{"__proto__":"v"}}]}', "mcp_servers[0].headers.__proto__: this key is not supported"],
    ["non-string env value", mutate((c) => (c.mcp_servers[1].env = { A: 1 })), "mcp_servers[1].env.A: expected a string"],
    ["non-string arg", mutate((c) => (c.mcp_servers[1].args = ["ok", false])), "mcp_servers[1].args[1]: expected a string"],
    ["empty command list", mutate((c) => (c.model = { provider: "command", command: [] })), "model.command: expected a non-empty list"],
    ["empty program", mutate((c) => (c.model = { provider: "command", command: ["", "x"] })), "model.command: expected a non-empty program name first"],
    ["max_turns too large", mutate((c) => (c.model.max_turns = 65)), "model.max_turns: expected an integer from 1 to 64"],
    ["fractional timeout", mutate((c) => (c.model.timeout_ms = 1.5)), "model.timeout_ms: expected an integer from 1 to 3600000"],
    ["bad event_source", mutate((c) => (c.evidence = { event_source: "host/agent" })), "evidence.event_source: expected a URI like scheme://…"],
    ["non-boolean decision_log", mutate((c) => (c.evidence = { event_source: "a://b", decision_log: "yes" })), "evidence.decision_log: expected true or false"],
    ["mcp_servers not a list", mutate((c) => (c.mcp_servers = {})), "mcp_servers: expected a list of MCP servers"],
    ["too many servers", mutate((c) => (c.mcp_servers = Array.from({ length: 65 }, (_, i) => ({ name: `s${i}`, transport: "stdio", command: "x" })))), "mcp_servers: expected at most 64 servers"],
    ["top level is a list", "[]", "config t.json: expected a JSON object at the top level"],
    ["model is a list", mutate((c) => (c.model = [])), "model: expected a mapping"],
    ["duplicate key", '{"model":{"provider":"command","command":["x"]},"mcp_servers":[{"name":"a","name":"b","transport":"stdio","command":"x"}]}', 'mcp_servers[0].name: duplicate key "name"'],
    ["not JSON", "{ model: 1 }", "config t.json: not valid JSON"],
    ["JSON with comments", '{ // c\n "model": {} }', "not valid JSON"],
  ];
  for (const [name, doc, expected] of cases) {
    test(name, () => expect(refusal(doc)).toContain(expected));
  }

  test("a value failing two checks of its pipe is said once", () => {
    const message = refusal(mutate((c) => {
      c.model.max_turns = 0.5;
      c.model.timeout_ms = 1.5;
    }));
    expect(message.split("\n").sort()).toEqual([
      "config t.json: model.max_turns: expected an integer from 1 to 64",
      "config t.json: model.timeout_ms: expected an integer from 1 to 3600000",
    ]);
  });

  test("every problem gets its own line", () => {
    const message = refusal(mutate((c) => {
      c.extra = 1;
      c.mcp_servers[1].events[0].delivery = "sse";
    }));
    expect(message.split("\n").sort()).toEqual([
      "config t.json: extra: unknown key",
      'config t.json: mcp_servers[1].events[0].delivery: expected "poll" | "push" | "webhook"',
    ]);
  });

  test("many problems are capped with a count", () => {
    const message = refusal(mutate((c) => {
      c.mcp_servers = Array.from({ length: 25 }, (_, i) => ({ name: `s${i}`, transport: "stdio" }));
    }));
    expect(message.split("\n")).toHaveLength(21);
    expect(message).toEndWith("(and 5 more problems)");
  });

  test("invalid UTF-8 is refused", () => {
    expect(() => parseServeConfig(new Uint8Array([0x7b, 0xff, 0x7d]), { source: "t.json", env: ENV })).toThrow("not valid UTF-8");
  });
});

describe("reading the file", () => {
  async function fileRefusal(path: string): Promise<VigilError> {
    try {
      await loadServeConfig(path, ENV);
    } catch (e) {
      if (e instanceof VigilError) return e;
      throw e;
    }
    throw new Error("expected a refusal");
  }

  test("a missing file names the file and hints at --config", async () => {
    const e = await fileRefusal(join(dir, "nope.json"));
    expect(e.code).toBe("config_invalid");
    expect(e.message).toBe(`config ${join(dir, "nope.json")}: cannot read: no such file`);
    expect(e.hint).toContain("--config");
  });

  test("an oversize file is refused by size", async () => {
    const e = await fileRefusal(write("big.json", " ".repeat(CONFIG_LIMITS.fileBytes + 1)));
    expect(e.message).toContain(`file is ${CONFIG_LIMITS.fileBytes + 1} bytes, larger than the 1048576-byte limit`);
  });

  test("a file of exactly the limit is read (and then judged as JSON)", async () => {
    const doc = JSON.stringify({ model: { provider: "command", command: ["x"] } });
    const path = write("limit.json", doc + " ".repeat(CONFIG_LIMITS.fileBytes - doc.length));
    expect((await loadServeConfig(path, {})).model.provider).toBe("command");
  });

  test("a directory is not a config file", async () => {
    mkdirSync(join(dir, "d.json"));
    expect((await fileRefusal(join(dir, "d.json"))).message).toContain("not a regular file");
  });

  test("not JSON, with line and column", async () => {
    const e = await fileRefusal(write("bad.json", '{\n  "model": nope\n}'));
    expect(e.message).toMatch(/not valid JSON: .*line 2, column \d+/);
  });

  test("relative cwd resolves against the config file's directory; absolute paths stay", async () => {
    const doc = mutate((c) => {
      c.mcp_servers[1].cwd = "work";
      c.policy = "/etc/vigil/policy.yaml";
    });
    const config = await loadServeConfig(write("cwd.json", JSON.stringify(doc)), ENV);
    expect(config.mcp_servers[1]).toMatchObject({ cwd: join(dir, "work") });
    expect(config.policy).toBe("/etc/vigil/policy.yaml");
  });
});

describe("resolveConfigPath", () => {
  const cwd = "/srv/app";
  test("--config wins over $VIGIL_CONFIG", () => {
    expect(resolveConfigPath("conf/a.json", { VIGIL_CONFIG: "/etc/b.json" }, cwd)).toBe("/srv/app/conf/a.json");
  });
  test("then $VIGIL_CONFIG", () => {
    expect(resolveConfigPath(undefined, { VIGIL_CONFIG: "/etc/b.json" }, cwd)).toBe("/etc/b.json");
    expect(resolveConfigPath(undefined, { VIGIL_CONFIG: "b.json" }, cwd)).toBe("/srv/app/b.json");
  });
  test("then ./vigil.json; an empty $VIGIL_CONFIG counts as unset", () => {
    expect(resolveConfigPath(undefined, {}, cwd)).toBe("/srv/app/vigil.json");
    expect(resolveConfigPath(undefined, { VIGIL_CONFIG: "" }, cwd)).toBe("/srv/app/vigil.json");
  });
  test("an empty --config is a usage error", () => {
    expect(() => resolveConfigPath("", {}, cwd)).toThrow("--config needs a file path");
  });
});
