// What a SIGHUP reload changes (src/serve/reload-diff.ts), decided on configs alone.
import { describe, expect, test } from "bun:test";
import { parseServeConfig } from "../../../src/serve/config/load.ts";
import type { ServeConfig } from "../../../src/serve/config/schema.ts";
import { countsText, diffReloadable } from "../../../src/serve/reload-diff.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";

const ENV = { OPENAI_API_KEY: "k", TOKEN: "secret-one", TOKEN2: "secret-two" };

function base(): Record<string, any> {
  return {
    model: { provider: "openai", base_url: "http://127.0.0.1:9/v1", model: "m" },
    policy: "/etc/vigil/policy.yaml",
    mcp_servers: [
      { name: "web", transport: "http", url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ${TOKEN}" } },
      { name: "fs", transport: "stdio", command: "srv", args: ["/srv"], events: [{ name: "file.changed", arguments: { dir: "a" } }] },
    ],
  };
}

const parse = (doc: unknown): ServeConfig => parseServeConfig(JSON.stringify(doc), { source: "t.json", env: ENV, baseDir: "/etc/vigil" });
const at = (doc: unknown, policyDigest: string | null = "sha256:p1") => ({ config: parse(doc), policyDigest });
const key = (server: string, name: string, args: Record<string, unknown> = {}) => subscriptionKey(server, name, args);

describe("diffReloadable", () => {
  test("the same config and policy: nothing changes, nothing is named", () => {
    const plan = diffReloadable(at(base()), at(base()));
    expect(plan).toMatchObject({
      policyChanged: false,
      servers: { added: [], changed: [], removed: [] },
      subscriptions: { added: [], changed: [], removed: [] },
      notReloaded: [],
    });
    expect(plan.config).toEqual(parse(base()));
  });

  test("a new policy digest is a policy change (the path may stay the same)", () => {
    expect(diffReloadable(at(base(), "sha256:p1"), at(base(), "sha256:p2")).policyChanged).toBe(true);
    expect(diffReloadable(at(base(), "sha256:p1"), at(base(), null)).policyChanged).toBe(true);
    expect(diffReloadable(at(base(), null), at(base(), null)).policyChanged).toBe(false);
  });

  test("servers: added, removed, and changed only when the connection changed", () => {
    const next = base();
    next.mcp_servers[0].headers.Authorization = "Bearer ${TOKEN2}"; // a new header value: reconnect
    next.mcp_servers[1].events = [{ name: "file.changed", arguments: { dir: "a" }, action: "notify" }]; // events only: no reconnect
    next.mcp_servers.push({ name: "tickets", transport: "http", url: "https://t.example.com/mcp" });
    const plan = diffReloadable(at(base()), at(next));
    expect(plan.servers).toEqual({ added: ["tickets"], changed: ["web"], removed: [] });

    const gone = base();
    gone.mcp_servers = [gone.mcp_servers[0]];
    expect(diffReloadable(at(base()), at(gone)).servers).toEqual({ added: [], changed: [], removed: ["fs"] });
  });

  test("each connection field of a stdio server counts (command, args, env, cwd, transport)", () => {
    for (const change of [
      (s: any) => (s.command = "srv2"),
      (s: any) => (s.args = ["/other"]),
      (s: any) => (s.env = { X: "1" }),
      (s: any) => (s.cwd = "/tmp"),
      (s: any) => Object.assign(s, { transport: "http", url: "https://x.example.com/mcp", command: undefined, args: undefined }),
    ]) {
      const next = base();
      change(next.mcp_servers[1]);
      expect(diffReloadable(at(base()), at(next)).servers.changed).toEqual(["fs"]);
    }
  });

  test("subscriptions by (server, name, canonical arguments): added, changed (delivery, action, instructions, max_age_ms), removed", () => {
    const next = base();
    next.mcp_servers[1].events = [
      { name: "file.changed", arguments: { dir: "a" }, instructions: "look" }, // changed
      { name: "file.changed", arguments: { dir: "b" } }, // added: other arguments
    ];
    next.mcp_servers[0].events = [{ name: "page", delivery: "poll" }]; // added on another server
    const plan = diffReloadable(at(base()), at(next));
    expect(plan.subscriptions).toEqual({
      added: [key("web", "page"), key("fs", "file.changed", { dir: "b" })],
      changed: [key("fs", "file.changed", { dir: "a" })],
      removed: [],
    });
    expect(plan.servers).toEqual({ added: [], changed: [], removed: [] });
    expect(countsText(plan.subscriptions)).toBe("+2 ~1 -0");
  });

  test("a removed server's subscriptions are removed with it", () => {
    const next = base();
    next.mcp_servers = [next.mcp_servers[0]];
    const plan = diffReloadable(at(base()), at(next));
    expect(plan.subscriptions).toEqual({ added: [], changed: [], removed: [key("fs", "file.changed", { dir: "a" })] });
    expect(countsText(plan.servers)).toBe("+0 ~0 -1");
  });

  test("argument key order is not a change", () => {
    const a = base();
    a.mcp_servers[1].events = [{ name: "e", arguments: { x: 1, y: 2 } }];
    const b = base();
    b.mcp_servers[1].events = [{ name: "e", arguments: { y: 2, x: 1 } }];
    expect(diffReloadable(at(a), at(b)).subscriptions).toEqual({ added: [], changed: [], removed: [] });
  });

  test("model, system_prompt and evidence are named, not applied: the config in force keeps them", () => {
    const next = base();
    next.model.model = "other";
    next.system_prompt = "be brief";
    next.evidence = { event_source: "vigil://h/a" };
    next.mcp_servers.pop();
    const plan = diffReloadable(at(base()), at(next));
    expect(plan.notReloaded).toEqual(["model", "system_prompt", "evidence"]);
    expect(plan.config.model).toEqual(parse(base()).model);
    expect(plan.config.system_prompt).toBeUndefined();
    expect(plan.config.evidence).toBeUndefined();
    // What is reloadable is taken from the new config.
    expect(plan.config.mcp_servers.map((s) => s.name)).toEqual(["web"]);
  });

  test("the policy path follows the new config, and a removed policy is removed", () => {
    const moved = base();
    moved.policy = "other.yaml";
    expect(diffReloadable(at(base()), at(moved)).config.policy).toBe("/etc/vigil/other.yaml");
    const none = base();
    delete none.policy;
    const plan = diffReloadable(at(base()), at(none, null));
    expect(plan.config.policy).toBeUndefined();
    expect("policy" in plan.config).toBe(false);
    expect(plan.policyChanged).toBe(true);
    expect(plan.notReloaded).toEqual([]);
  });
});
