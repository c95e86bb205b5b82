// `--log-format text|json` (issue 15 item 3): the flag and VIGIL_LOG_FORMAT are parsed strictly
// (src/serve/log-format.ts), and a JSON line (src/shared/log.ts jsonLine) carries time, level, msg
// and the stable fields, every string scrubbed. What the binary writes in either format — and that
// the flag is applied before the other flags are judged — is checked end to end in
// test/e2e/log-format-json.test.ts.
import { describe, expect, test } from "bun:test";
import { jsonLine, parseLogFormat } from "../../../src/shared/log.ts";
import { REDACTED, registerSecrets } from "../../../src/shared/scrub.ts";
import { parseServeArgs } from "../../../src/serve/flags.ts";
import { logFormatFromEnv, planLogFormat } from "../../../src/serve/log-format.ts";
import { refusalOf } from "../../helpers/refusal.ts";

const refusal = refusalOf;

describe("log format knobs", () => {
  test("parseLogFormat takes text and json exactly", () => {
    expect(parseLogFormat("text")).toBe("text");
    expect(parseLogFormat("json")).toBe("json");
    for (const raw of ["JSON", " json", "", "ndjson", "logfmt"]) expect(parseLogFormat(raw)).toBeNull();
  });

  test("--log-format: scanned by serve's table; any other value is a usage error (exit 2)", () => {
    expect(parseServeArgs(["--log-format=json"])["log-format"]).toBe("json");
    expect(parseServeArgs(["--log-format", "text"])["log-format"]).toBe("text");
    expect(planLogFormat(undefined)).toBeUndefined();
    const e = refusal(() => planLogFormat("xml"));
    expect(e.code).toBe("usage");
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe('--log-format: expected "text" or "json" (got "xml")');
    expect(refusal(() => parseServeArgs(["--log-format"])).message).toBe("serve: --log-format needs a value");
  });

  test("VIGIL_LOG_FORMAT: unset or empty is no choice; case and blanks ignored; a bad value is a config error (exit 2), its shown value bounded", () => {
    expect(logFormatFromEnv({})).toBeUndefined();
    expect(logFormatFromEnv({ VIGIL_LOG_FORMAT: "" })).toBeUndefined();
    expect(logFormatFromEnv({ VIGIL_LOG_FORMAT: "json" })).toBe("json");
    expect(logFormatFromEnv({ VIGIL_LOG_FORMAT: " JSON\n" })).toBe("json");
    expect(logFormatFromEnv({ VIGIL_LOG_FORMAT: "Text" })).toBe("text");
    const e = refusal(() => logFormatFromEnv({ VIGIL_LOG_FORMAT: `Json${"x".repeat(100)}` }));
    expect(e.code).toBe("config_invalid");
    expect(e.exitCode).toBe(2);
    expect(e.message).toBe(`VIGIL_LOG_FORMAT: expected "text" or "json" (got "Json${"x".repeat(28)}")`);
  });
});

describe("jsonLine", () => {
  test("one line: time, level (info by default), msg, then the fields given", () => {
    const line = jsonLine("serve: session \"a\" reaped after 60 s idle", { session: "a", code: "session_reaped" });
    expect(line.endsWith("\n")).toBe(true);
    expect(line.indexOf("\n")).toBe(line.length - 1);
    const record = JSON.parse(line) as Record<string, unknown>;
    expect(Object.keys(record)).toEqual(["time", "level", "msg", "session", "code"]);
    expect(record).toMatchObject({ level: "info", msg: "serve: session \"a\" reaped after 60 s idle", session: "a", code: "session_reaped" });
    expect(new Date(record.time as string).toISOString()).toBe(record.time as string);
  });

  test("a multi-line message stays one line; absent fields are left out", () => {
    const record = JSON.parse(jsonLine("config: 2 problems\nmodel: missing\nmcp_servers: missing", { level: "error", code: "config_invalid", server: undefined, hint: "see README" }));
    expect(record).toEqual({ time: expect.any(String), level: "error", msg: "config: 2 problems\nmodel: missing\nmcp_servers: missing", code: "config_invalid", hint: "see README" });
  });

  test("every string is scrubbed: the message and each field, registered secrets and webhook secrets", () => {
    const secret = "tok-UNIT-log-format-7f3a9c21";
    registerSecrets([secret]);
    const line = jsonLine(`upstream said ${secret} and whsec_c2VjcmV0LXNlY3JldA==`, { server: `srv-${secret}`, code: "server_stderr" });
    expect(line).not.toContain(secret);
    expect(line).not.toContain("whsec_c2Vj");
    const record = JSON.parse(line) as Record<string, string>;
    expect(record.msg).toBe(`upstream said ${REDACTED} and ${REDACTED}`);
    expect(record.server).toBe(`srv-${REDACTED}`);
  });
});
