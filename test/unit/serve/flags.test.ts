// serve's flags → plan (src/serve/flags.ts): pure, so the refusals and the mode choice are checked
// in-process; the e2e suites check the same refusals through the binary (exit 2).
import { describe, expect, test } from "bun:test";
import { DEFAULT_IDLE_TIMEOUT_SECS, type ServeFlags, planServe } from "../../../src/serve/flags.ts";
import { refusalOf } from "../../helpers/refusal.ts";

const refusal = (flags: ServeFlags) => refusalOf(() => planServe(flags));

describe("planServe", () => {
  test("no flags: stdio mode, session default, which owns the configured subscriptions", () => {
    expect(planServe({})).toEqual({
      config: undefined,
      stateDir: undefined,
      eventsOwner: "default",
      eventsReapable: false,
      transcriptRetainBytes: 1024 * 1024 * 1024,
      callbackUrl: null,
      metrics: false,
      check: null,
      mode: { kind: "stdio", session: "default" },
    });
    expect(planServe({ "transcript-retain-bytes": "0" }).transcriptRetainBytes).toBe(0);
    expect(planServe({ "transcript-retain-bytes": "5000000" }).transcriptRetainBytes).toBe(5_000_000);
  });

  test("--listen: daemon mode with the default idle timeout; the events owner is --mcp-events-session", () => {
    const plan = planServe({ listen: "8080", "mcp-events-session": "ops", "mcp-events-reapable": true, config: "c.json" });
    expect(plan.mode).toEqual({ kind: "daemon", listen: { hostname: "127.0.0.1", port: 8080 }, idleTimeoutSecs: DEFAULT_IDLE_TIMEOUT_SECS, maxSessions: 1000, metricsListen: null });
    expect(plan.eventsOwner).toBe("ops");
    expect(plan.eventsReapable).toBe(true);
    expect(plan.config).toBe("c.json");
    expect(planServe({ listen: "127.0.0.1:0" }).eventsOwner).toBeUndefined();
    expect(planServe({ listen: "127.0.0.1:0" }).callbackUrl).toBeNull();
  });

  test("--mcp-events-callback-url reaches the plan, path included (http:// stays accepted)", () => {
    expect(planServe({ listen: "8080", "mcp-events-callback-url": "https://edge.example.com/agent/" }).callbackUrl?.href).toBe("https://edge.example.com/agent/");
    expect(planServe({ listen: "8080", "mcp-events-callback-url": "http://127.0.0.1:9/" }).callbackUrl?.href).toBe("http://127.0.0.1:9/");
  });

  test("--metrics-listen: a loopback address for /metrics; VIGIL_METRICS=off keeps no metrics", () => {
    const plan = planServe({ listen: "0.0.0.0:8080", "metrics-listen": "127.0.0.1:9100" }, {});
    expect(plan.metrics).toBe(true);
    expect(plan.mode).toMatchObject({ kind: "daemon", metricsListen: { hostname: "127.0.0.1", port: 9100 } });
    for (const host of ["localhost:0", "[::1]:0", "127.1.2.3:0"]) expect(planServe({ listen: "8080", "metrics-listen": host }, {}).metrics).toBe(true);
    expect(planServe({ listen: "8080" }, { VIGIL_METRICS: "off" }).metrics).toBe(false);
    expect(planServe({ listen: "8080" }, { VIGIL_METRICS: "ON" }).metrics).toBe(true);
    const refused = (flags: ServeFlags, env: Record<string, string>) => refusalOf(() => planServe(flags, env));
    expect(refused({ "metrics-listen": "127.0.0.1:9100" }, {}).message).toContain("--metrics-listen moves the daemon's /metrics: it requires --listen");
    expect(refused({ listen: "8080", "metrics-listen": "0.0.0.0:9100" }, {}).message).toContain("not a loopback address");
    expect(refused({ listen: "8080", "metrics-listen": "[::]:9100" }, {}).message).toContain("not a loopback address");
    expect(refused({ listen: "8080", "metrics-listen": "localhost" }, {}).message).toContain("--metrics-listen \"localhost\": missing :PORT");
    const off = refused({ listen: "8080", "metrics-listen": "127.0.0.1:9100" }, { VIGIL_METRICS: "off" });
    expect(off.exitCode).toBe(2);
    expect(off.message).toContain("VIGIL_METRICS=off");
  });

  test("each refusal is a usage error (exit 2) naming the flag", () => {
    const cases: [ServeFlags, string][] = [
      [{ listen: "localhost" }, "--listen"],
      [{ listen: "8080", session: "s" }, "--session names the stdio session"],
      [{ session: "../x" }, "--session: invalid session name"],
      [{ "session-idle-timeout": "-1" }, "--session-idle-timeout: expected whole seconds"],
      [{ "mcp-events-callback-url": "https://agent.example.com" }, "--mcp-events-callback-url requires --listen"],
      [{ listen: "8080", "mcp-events-callback-url": "ftp://x" }, "--mcp-events-callback-url: expected an http(s) URL"],
      [{ listen: "8080", "mcp-events-callback-url": "https://edge.example.com/a?b=1" }, "--mcp-events-callback-url: expected a base URL without user info, query or fragment"],
      [{ listen: "8080", "mcp-events-callback-url": "https://u:p@edge.example.com/" }, "--mcp-events-callback-url: expected a base URL without user info, query or fragment"],
      [{ "mcp-events-session": "" }, "--mcp-events-session: invalid session name"],
      [{ "transcript-retain-bytes": "1G" }, "--transcript-retain-bytes: expected a whole number of bytes"],
      [{ "transcript-retain-bytes": "-1" }, "--transcript-retain-bytes: expected a whole number of bytes"],
    ];
    for (const [flags, message] of cases) {
      const e = refusal(flags);
      expect(e.exitCode).toBe(2);
      expect(e.message).toContain(message);
    }
  });
});
