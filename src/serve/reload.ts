/**
 * Reloading a running `vigil serve` (issue 15 item 4; SIGHUP in daemon mode, daemon/run.ts): the
 * config file is read again by the loader serve started with (config/load.ts: same bounds, same
 * `${VAR}` expansion from the same environment) and the policy file it names is read again.
 *
 * - Either refused (any VigilError: bad JSON, schema, expansion, policy): one log line, level
 *   error, code `reload_refused`, saying what failed (the loaders' messages, which never hold a
 *   secret) — and nothing changes.
 * - Otherwise what reload-diff.ts decides is applied, in an order that loses nothing: the policy
 *   (only when its digest changed, so limits and rate buckets are not reset by a reload that left
 *   it alone; open sessions take it at their next decision: policy-holder.ts); the owner's
 *   configured subscriptions that go or change stop, over the connections they have; the pool
 *   takes the new `mcp_servers` (changed ones reconnect, added ones connect, removed ones close and
 *   their process groups end; tools are listed again as after any reconnect); then the configured
 *   subscriptions not running start. Sessions, their runs and their SSE clients are not touched.
 * - Members that are not reloaded but differ are named in one line (`not reloaded: model —
 *   restart to apply`), and every applied reload logs one line with what is in force: the policy
 *   digest decision records carry, the SHA-256 of the config file's bytes, and the counts.
 *
 * Reloads run one at a time: one asked for while another runs queues one more (however many are
 * asked for meanwhile), which starts after it. Each step is bounded (the stops, the closes and the
 * first connection attempts); RELOAD_BOUND_MS is a backstop past which the queue goes on.
 */
import type { McpServerPool } from "../mcp/server-pool.ts";
import { type LoadedPolicy, loadPolicyFile } from "../policy/load.ts";
import { errorMessage } from "../shared/errors.ts";
import { CONFIG } from "../shared/metrics/catalog.ts";
import { type LogFields, logLine } from "../shared/log.ts";
import { within } from "../shared/time.ts";
import type { Env } from "./config/env.ts";
import { loadServeConfigFile } from "./config/load.ts";
import type { ServeConfig } from "./config/schema.ts";
import type { EventsService } from "./events-service.ts";
import type { PolicyHolder } from "./policy-holder.ts";
import { type ReloadPlan, countsText, diffReloadable } from "./reload-diff.ts";

/** Past this a reload is reported as overrun and the next one may start (its steps are bounded well below it). */
export const RELOAD_BOUND_MS = 120_000;

export interface ReloadDeps {
  /** The config file serve started with (absolute). */
  configPath: string;
  env: Env;
  /** The config serve started with. */
  config: ServeConfig;
  policy: PolicyHolder;
  pool: Pick<McpServerPool, "reconfigure">;
  events: Pick<EventsService, "reconfigure">;
  log?: (message: string, fields?: LogFields) => void;
}

/** `failed`: the new files were valid but applying them threw part-way (a bug); otherwise they were refused. */
export type ReloadOutcome = { applied: true; plan: ReloadPlan } | { applied: false; failed: boolean; reason: string };

export class ServeReloader {
  private inForce: ServeConfig;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly log: (message: string, fields?: LogFields) => void;

  constructor(private readonly d: ReloadDeps) {
    this.inForce = d.config;
    this.log = d.log ?? logLine;
  }

  /** The config in force: as started, with the reloaded policy path and `mcp_servers`. */
  get config(): ServeConfig {
    return this.inForce;
  }

  /**
   * Asks for a reload; resolves once a reload that started after this call ended (at once when
   * stopped). Never rejects.
   */
  reload(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    const running = this.drain();
    this.running = running;
    return running;
  }

  /** Shutdown: no reload starts from now on (a queued one is dropped); one in progress runs out. */
  stop(): void {
    this.stopped = true;
    this.again = false;
  }

  private async drain(): Promise<void> {
    try {
      do {
        this.again = false;
        const once = this.once();
        if ((await within(once, RELOAD_BOUND_MS)) === undefined) {
          this.log(`serve: reload: still running after ${RELOAD_BOUND_MS / 1000} s; the next reload may start`, { level: "error", code: "reload_overrun" });
        }
      } while (this.again && !this.stopped);
    } finally {
      this.running = null;
    }
  }

  /** One reload, counted by outcome. Never rejects. */
  private async once(): Promise<ReloadOutcome> {
    const outcome = await this.attempt();
    const kind = outcome.applied ? "applied" : outcome.failed ? "failed" : "refused";
    CONFIG.reloads.at(kind).inc();
    CONFIG.lastReloadSuccessful.at().set(outcome.applied ? 1 : 0);
    if (outcome.applied) CONFIG.lastReloadSuccessTime.at().set(Date.now() / 1000);
    return outcome;
  }

  /** Loads, decides, applies, logs. Never rejects. */
  private async attempt(): Promise<ReloadOutcome> {
    let loaded: { config: ServeConfig; sha256: string; policy: LoadedPolicy | null };
    try {
      const file = await loadServeConfigFile(this.d.configPath, this.d.env);
      const policy = file.config.policy === undefined ? null : await loadPolicyFile(file.config.policy);
      loaded = { ...file, policy };
    } catch (e) {
      // The loaders' messages name the file, the path inside it and what was expected, never a value.
      const reason = errorMessage(e).replaceAll("\n", "; ");
      this.log(`serve: reload refused: ${reason}; the config and policy in force stay`, { level: "error", code: "reload_refused" });
      return { applied: false, failed: false, reason };
    }
    if (this.stopped) return { applied: false, failed: false, reason: "serve is stopping" };
    try {
      return { applied: true, plan: await this.apply(loaded) };
    } catch (e) {
      // A bug: what was applied stays applied; the line says so.
      this.log(`serve: reload failed part-way: ${errorMessage(e)}`, { level: "error", code: "reload_failed" });
      return { applied: false, failed: true, reason: errorMessage(e) };
    }
  }

  private async apply(loaded: { config: ServeConfig; sha256: string; policy: LoadedPolicy | null }): Promise<ReloadPlan> {
    const { policy, pool, events } = this.d;
    const plan = diffReloadable({ config: this.inForce, policyDigest: policy.digest }, { config: loaded.config, policyDigest: loaded.policy?.digest ?? null });
    if (plan.policyChanged) {
      const wasEnforced = policy.current !== null;
      policy.replace(loaded.policy);
      // Applied like any valid config (a restart would run it the same way, --check-config passes
      // it), but never silently: from now on every call is allowed and recorded `no_policy`.
      if (wasEnforced && loaded.policy === null) {
        this.log("serve: reload: the config names no policy any more: policy enforcement is off, every tool call is allowed (no_policy)", { level: "warn", code: "policy_removed" });
      }
    }
    this.inForce = plan.config;
    const replace = new Set(plan.servers.changed);
    await events.reconfigure(plan.config, plan.subscriptions, () => pool.reconfigure(plan.config.mcp_servers, replace));
    if (plan.notReloaded.length > 0) {
      this.log(`serve: not reloaded: ${plan.notReloaded.join(", ")} — restart to apply`, { level: "warn", code: "reload_partial" });
    }
    this.log(
      `serve: reloaded: policy ${policy.digest ?? "none"} config sha256:${loaded.sha256} servers ${countsText(plan.servers)} subscriptions ${countsText(plan.subscriptions)}`,
      { code: "reloaded" },
    );
    return plan;
  }
}
