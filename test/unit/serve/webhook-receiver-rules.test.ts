import { describe, expect, test } from "bun:test";
import { WebhookRouteTable } from "../../../src/events/webhook/routes.ts";
import { healthReport } from "../../../src/serve/daemon/health.ts";
import { REFUSAL_LOG_INTERVAL_MS, RefusalLog } from "../../../src/serve/daemon/webhook-refusal-log.ts";
import { announcedLength, receiverPrefix } from "../../../src/serve/daemon/webhook-receiver.ts";

describe("receiver rules", () => {
  test("the receiver path is the callback path without its trailing slash, then /_vigil/mcp-events/", () => {
    expect(receiverPrefix(new URL("https://edge.example.com"))).toBe("/_vigil/mcp-events/");
    expect(receiverPrefix(new URL("https://edge.example.com/"))).toBe("/_vigil/mcp-events/");
    expect(receiverPrefix(new URL("https://edge.example.com/agent"))).toBe("/agent/_vigil/mcp-events/");
    expect(receiverPrefix(new URL("https://edge.example.com/a/b//"))).toBe("/a/b/_vigil/mcp-events/");
  });

  test("Content-Length: missing is 411, over 1 MiB or not a decimal is 413", () => {
    expect(announcedLength(null)).toBe("no_length");
    expect(announcedLength("0")).toBe(0);
    expect(announcedLength(String(1024 * 1024))).toBe(1024 * 1024);
    expect(announcedLength(String(1024 * 1024 + 1))).toBe("too_large");
    for (const bad of ["", "-1", "1e3", "0x10", " 5", "12345678901234567"]) expect(announcedLength(bad)).toBe("too_large");
  });
});

describe("refusal log", () => {
  test("at most one line per minute per kind, the next one carrying the count of what it held back", () => {
    let t = 0;
    const lines: string[] = [];
    const log = new RefusalLog(() => t, (l) => lines.push(l));
    log.note("signature");
    log.note("signature");
    log.note("timestamp");
    t += REFUSAL_LOG_INTERVAL_MS - 1;
    log.note("signature");
    expect(lines).toEqual(["serve: webhook receiver refused 1 delivery (signature)", "serve: webhook receiver refused 1 delivery (timestamp)"]);
    t += 1;
    log.note("signature");
    expect(lines.at(-1)).toBe("serve: webhook receiver refused 3 deliveries (signature) since the last line about it");
  });
});

describe("health", () => {
  test("the webhook counters appear beside ok, and refusals never make it false", () => {
    const routes = new WebhookRouteTable();
    routes.refused("signature");
    routes.succeeded("accepted");
    const report = healthReport({ servers: [], sessions: 0, maxSessions: 10, eventsSession: null, eventsSessionRunning: false, webhook: routes.counters });
    expect(report.ok).toBe(true);
    expect(report.webhook?.accepted).toBe(1);
    expect(report.webhook?.refused.signature).toBe(1);
    expect(report.webhook?.refused.unknown_token).toBe(0);
    expect(Object.keys(report.webhook ?? {})).toEqual(["accepted", "duplicates", "verifications", "refused"]);
    expect(healthReport({ servers: [], sessions: 0, maxSessions: 10, eventsSession: null, eventsSessionRunning: false }).webhook).toBeUndefined();
  });
});
