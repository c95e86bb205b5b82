import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { VigilError } from "../../../src/shared/errors.ts";
import { expandString } from "../../../src/serve/config/expand.ts";
import { loadServeConfig, modelApiKey, parseServeConfig } from "../../../src/serve/config/load.ts";
import { describeConfig, redactConfig, secretValues } from "../../../src/serve/config/redact.ts";
import { REDACTED, scrubText } from "../../../src/shared/scrub.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const FIXTURES = join(import.meta.dir, "../../fixtures/configs");

/** Token-like values: none may appear in any message or redacted output. */
const TOKEN = "sk-live-Zq8r7W1xY2tQ9pAlMn0B";
const API_KEY = "sk-proj-Kf3J9dLq0wE5rT7yU1iO";
const LITERAL = "ghp_LiteralHeaderSecret1234";
const ENV = { TOKEN, API_KEY, HOST: "mcp.example.com", EMPTY: "" };

function doc(change: (c: Record<string, any>) => void = () => {}): string {
  const c: Record<string, any> = {
    model: { provider: "openai", base_url: "https://${HOST}/v1", model: "m", api_key_env: "API_KEY" },
    system_prompt: "Literal ${TOKEN} stays",
    mcp_servers: [
      {
        name: "web", transport: "http", url: "https://${HOST}/mcp?key=${TOKEN}",
        headers: { Authorization: "Bearer ${TOKEN}", "X-Static": LITERAL, "X-Cost": "$$5" },
        events: [{ name: "e", instructions: "keep ${TOKEN}" }],
      },
      {
        name: "fs", transport: "stdio", command: "${HOST}-server", args: ["--token=${TOKEN}", "plain", "a$${B}"],
        env: { GITHUB_TOKEN: "${TOKEN}", MODE: "ro" },
      },
    ],
  };
  change(c);
  return JSON.stringify(c);
}

const parse = (text: string, env: Record<string, string> = ENV) => parseServeConfig(text, { source: "s.json", env });

function refusal(text: string, env: Record<string, string> = ENV): string {
  try {
    parse(text, env);
  } catch (e) {
    if (!(e instanceof VigilError)) throw e;
    expect(e.code).toBe("config_invalid");
    expectNoSecret(e.message + (e.hint ?? ""));
    return e.message;
  }
  throw new Error("expected a refusal");
}

function expectNoSecret(text: string): void {
  for (const secret of [TOKEN, API_KEY, LITERAL]) expect(text).not.toContain(secret);
}

describe("expandString", () => {
  test("${NAME}, $$ and text around them", () => {
    expect(expandString("a ${HOST} b", ENV)).toEqual({ ok: true, value: "a mcp.example.com b", variables: ["HOST"] });
    expect(expandString("$$${HOST}$$", ENV)).toEqual({ ok: true, value: "$mcp.example.com$", variables: ["HOST"] });
    expect(expandString("$${HOST}", ENV)).toEqual({ ok: true, value: "${HOST}", variables: [] });
    expect(expandString("x${EMPTY}y", ENV)).toEqual({ ok: true, value: "xy", variables: ["EMPTY"] });
    expect(expandString("no dollars", ENV)).toEqual({ ok: true, value: "no dollars", variables: [] });
  });

  test("a bare $, $NAME, lower-case and unclosed references are errors", () => {
    for (const raw of ["a$", "$HOST", "${host}", "${HOST", "${}", "${1A}", "$ {HOST}"]) {
      const result = expandString(raw, ENV);
      expect(result.ok).toBe(false);
    }
  });

  test("an unset variable is named", () => {
    expect(expandString("${NOPE}", ENV)).toEqual({ ok: false, message: "environment variable NOPE is not set" });
  });
});

describe("expansion in a config", () => {
  test("applies to base_url, url, headers, command, args, env only", () => {
    const c = parse(doc());
    expect(c.model).toMatchObject({ base_url: "https://mcp.example.com/v1" });
    expect(c.system_prompt).toBe("Literal ${TOKEN} stays");
    const [web, fs] = c.mcp_servers;
    expect(web).toMatchObject({
      url: `https://mcp.example.com/mcp?key=${TOKEN}`,
      headers: { Authorization: `Bearer ${TOKEN}`, "X-Static": LITERAL, "X-Cost": "$5" },
    });
    expect(web!.events![0]!.instructions).toBe("keep ${TOKEN}");
    expect(fs).toMatchObject({
      command: "mcp.example.com-server", args: [`--token=${TOKEN}`, "plain", "a${B}"],
      env: { GITHUB_TOKEN: TOKEN, MODE: "ro" },
    });
  });

  test("command model argv is expanded", () => {
    const text = JSON.stringify({ model: { provider: "command", command: ["run-${HOST}", "$$HOME"] } });
    expect(parse(text).model).toMatchObject({ command: ["run-mcp.example.com", "$HOME"] });
  });

  test("an unset variable names the variable and the path, not the value", () => {
    const message = refusal(doc((c) => (c.mcp_servers[0].headers.Authorization = "Bearer ${MISSING_TOKEN}")));
    expect(message).toBe("config s.json: mcp_servers[0].headers.Authorization: environment variable MISSING_TOKEN is not set");
  });

  test("a bare $ in an expandable value is refused without echoing it", () => {
    const message = refusal(doc((c) => (c.mcp_servers[0].headers["X-Static"] = `${LITERAL}$`)));
    expect(message).toContain('mcp_servers[0].headers.X-Static: a "$" must start ${NAME}');
  });

  test("expanded URLs are validated again", () => {
    const message = refusal(doc((c) => (c.mcp_servers[0].url = "${TOKEN}")));
    expect(message).toBe("config s.json: mcp_servers[0].url: expected an http:// or https:// URL (after ${VAR} expansion)");
  });

  test("an expanded header value with a line break is refused without echoing it", () => {
    const message = refusal(doc(), { ...ENV, TOKEN: `${TOKEN}\r\nX-Evil: 1` });
    expect(message).toContain("mcp_servers[0].headers.Authorization: expected a string without line breaks (after ${VAR} expansion)");
  });

  test("api_key_env must name a set variable; the key is read at use time", () => {
    const message = refusal(doc(), { TOKEN, HOST: "h" });
    expect(message).toBe("config s.json: model.api_key_env: environment variable API_KEY is not set");
    const config = parse(doc());
    expect(JSON.stringify(config)).not.toContain(API_KEY);
    expect(modelApiKey(config, ENV)).toBe(API_KEY);
    expect(modelApiKey(config, { API_KEY: "rotated" })).toBe("rotated");
    expect(() => modelApiKey(config, {})).toThrow("environment variable API_KEY is not set");
  });

  test("no API key for a command model or without api_key_env", () => {
    expect(modelApiKey(parse(JSON.stringify({ model: { provider: "command", command: ["x"] } })), ENV)).toBeUndefined();
    expect(modelApiKey(parse(doc((c) => delete c.model.api_key_env)), ENV)).toBeUndefined();
  });
});

describe("secrets never leak", () => {
  test("redactConfig hides every header and env value and every expanded value", () => {
    const config = parse(doc());
    const redacted = redactConfig(config);
    expectNoSecret(JSON.stringify(redacted));
    expect(redacted.model).toMatchObject({ base_url: "<redacted>" });
    const [web, fs] = redacted.mcp_servers;
    expect(web).toMatchObject({
      url: "<redacted>",
      headers: { Authorization: "<redacted>", "X-Static": "<redacted>", "X-Cost": "<redacted>" },
    });
    expect(fs).toMatchObject({ command: "<redacted>", args: ["<redacted>", "plain", "a${B}"], env: { GITHUB_TOKEN: "<redacted>", MODE: "<redacted>" } });
    // The original is untouched.
    expect(config.mcp_servers[0]).toMatchObject({ headers: { Authorization: `Bearer ${TOKEN}` } });
  });

  test("a URL with user:password is redacted even when written literally", () => {
    const config = parse(doc((c) => (c.model.base_url = `https://user:${TOKEN}@llm.example.com/v1`)));
    expect(redactConfig(config).model).toMatchObject({ base_url: "<redacted>" });
  });

  test("a copy of a loaded config still gets headers and env redacted", () => {
    const copy = structuredClone(parse(doc()));
    const redacted = JSON.stringify(redactConfig(copy));
    expect(redacted).not.toContain(LITERAL);
    expect(redacted).not.toContain(`Bearer ${TOKEN}`);
  });

  test("describeConfig is one short line without secrets", async () => {
    const line = describeConfig(parse(doc()));
    expectNoSecret(line);
    expect(line).toBe("model=openai:m@<redacted> servers=web(http,1 event),fs(stdio)");
    const example = describeConfig(await loadServeConfig(join(FIXTURES, "serve-example.json"), { OPENAI_API_KEY: API_KEY, TICKETS_TOKEN: TOKEN }));
    expectNoSecret(example);
    expect(example).toBe(
      `model=openai:qwen3@http://127.0.0.1:11434/v1 servers=tickets(http,1 event),fs(stdio) policy=${join(FIXTURES, "policy.yaml")} evidence=vigil://host/agent`,
    );
  });

  test("describeConfig drops query strings of URLs that were not expanded", () => {
    const line = describeConfig(parse(doc((c) => (c.model.base_url = `https://llm.example.com/v1?api_key=${LITERAL}`))));
    expect(line).toStartWith("model=openai:m@https://llm.example.com/v1 ");
    expectNoSecret(line);
  });

  test("no refusal message carries a secret, whatever the problem", () => {
    const broken = [
      doc((c) => (c.mcp_servers[0].headers.Authorization = 42)),
      doc((c) => (c.mcp_servers[0].headers["X-Static"] = `${LITERAL}\n`)),
      doc((c) => (c.mcp_servers[0].url = `ftp://${LITERAL}`)),
      doc((c) => (c.mcp_servers[0].url = "ftp://${TOKEN}")),
      doc((c) => (c.mcp_servers[1].env.GITHUB_TOKEN = [LITERAL])),
      doc((c) => (c.mcp_servers[1].args = [`${LITERAL}$`])),
      doc((c) => (c.mcp_servers[1].command = `\u0000${LITERAL}`)),
      doc((c) => (c.model.base_url = `${LITERAL}`)),
      doc((c) => (c.model.provider = LITERAL)),
      doc((c) => (c.mcp_servers[0].transport = LITERAL)),
      doc((c) => (c.mcp_servers[0].events[0].delivery = LITERAL)),
      doc((c) => (c.mcp_servers[0].headers[`X-${"a".repeat(300)}`] = LITERAL)),
      doc((c) => (c.mcp_servers[1].env.LONG = `${LITERAL}${"x".repeat(40000)}`)),
      doc((c) => (c.mcp_servers[1].cwd = LITERAL.slice(0, 0))),
      `{"model":{"provider":"command","command":["x"]},"mcp_servers":[{"name":"a","transport":"http","url":"http://h","headers":{"A":"${LITERAL}","A":"${LITERAL}"}}]}`,
      `{"model": "${LITERAL}" ,}`,
    ];
    for (const text of broken) refusal(text);
    refusal(doc(), { ...ENV, TOKEN: `not a url ${TOKEN}`, HOST: `${TOKEN} x` });
  });
});

describe("the loaded config's secrets are scrubbed from every later message", () => {
  test("secretValues: what redactConfig hides, and a URL's password alone", () => {
    const config = parse(doc((c) => (c.model.base_url = "https://user:pa55w0rd-x@models.example.com/v1")));
    const values = secretValues(config);
    for (const v of [`Bearer ${TOKEN}`, LITERAL, TOKEN, "pa55w0rd-x"]) expect(values).toContain(v);
    expect(values).not.toContain("plain");
  });

  test("loadServeConfig registers them, and the model's API key, with the process-wide scrubber", async () => {
    const tmp = tmpDir("vigil-config-secrets");
    try {
      const file = join(tmp.path, "vigil.json");
      await Bun.write(file, doc());
      const key = `sk-${crypto.randomUUID()}`;
      const token = `tok-${crypto.randomUUID()}`;
      expect(scrubText(`${key} ${token}`)).toBe(`${key} ${token}`);
      await loadServeConfig(file, { ...ENV, TOKEN: token, API_KEY: key });
      expect(scrubText(`key ${key}, token ${token}, ${LITERAL}`)).toBe(`key ${REDACTED}, token ${REDACTED}, ${REDACTED}`);
    } finally {
      tmp.cleanup();
    }
  });
});
