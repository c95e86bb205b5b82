/**
 * `vigil serve --check-config` (issue 15 item 5; serve.md "Operations"): judges what the same
 * flags would start — the flags themselves (flags.ts, already planned), the config, the tuning
 * knobs, the signing key, the state dir and the policy (refusables.ts, the start's own loader) —
 * prints a summary on stdout and exits 0, or prints the first refusal as serve does at start and
 * exits 2. For systemd's `ExecStartPre=` and for CI.
 *
 * It starts nothing: no MCP server (a stdio server's command is not run, an HTTP server is not
 * contacted), no model request, no listener (a `--listen` port in use is found only by the start),
 * and it creates or changes no file (the state dir is judged by state-dir-check.ts, not created).
 * Not judged, because only a session reads them: a session's own state files (transcript, events
 * state, decision log) — serve refuses a damaged one when that session opens.
 *
 * The summary never holds a secret: it is built from the redacted config (config/redact.ts), shows
 * no header, env value, argument or API key (only the key's variable name), only the host of an
 * HTTP server's URL, and the whole text goes through the scrubber as a last guard. Warnings
 * (state-dir-check.ts) go to stderr, one log line each; the check still passes.
 */
import { REDACTED, scrubText } from "../shared/scrub.ts";
import { EXIT } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { writeStdout } from "../shared/output.ts";
import type { Env } from "./config/env.ts";
import { redactConfig } from "./config/redact.ts";
import { TUNING_KNOBS, type TuningKnob } from "./config/tuning.ts";
import { listenUrl } from "./daemon/listen.ts";
import type { ServePlan } from "./flags.ts";
import { describeModel, modelApiKeyVariable } from "./models/registry.ts";
import { type Refusables, loadRefusables } from "./refusables.ts";
import { type StateDirReport, inspectStateDir } from "./state/state-dir-check.ts";

/** What the check found, as `--json` prints it (snake_case keys, like the config's). */
export interface CheckSummary {
  config: string;
  mode:
    | { kind: "stdio"; session: string }
    | { kind: "daemon"; listen: string; metrics_listen: string | null; callback_host: string | null; max_sessions: number; session_idle_timeout_secs: number };
  model: { provider: string; description: string; api_key_env: string | null };
  servers: ({ name: string; transport: "stdio"; command: string } | { name: string; transport: "http"; host: string })[];
  subscriptions: { server: string; event: string; delivery: string; action: string }[];
  policy: { path: string; digest: string } | null;
  evidence: { event_source: string; decision_log: boolean; signing_key_id: string | null } | null;
  state_dir: { path: string; exists: boolean };
  /** The tuning knobs set in the environment (variable → value); the others are at their defaults. */
  tuning: Record<string, number>;
  warnings: string[];
}

/** Runs the check; resolves with 0, or throws the first refusal (a VigilError: the error boundary prints it, exit 2). */
export async function runCheckConfig(plan: ServePlan, env: Env = process.env): Promise<number> {
  let stateDir: StateDirReport | undefined;
  const loaded = await loadRefusables({ config: plan.config, stateDir: plan.stateDir }, env, (dir) => {
    stateDir = inspectStateDir(dir);
    return stateDir.path;
  });
  // Always set: loadRefusables calls the state-dir step before it returns.
  const summary = checkSummary(plan, loaded, stateDir!, env);
  for (const warning of summary.warnings) logLine(`serve --check-config: warning: ${warning}`, { level: "warn", code: "check_config_warning" });
  writeStdout(scrubText(plan.check?.json === true ? JSON.stringify(summary) : renderCheckSummary(summary)));
  return EXIT.ok;
}

/** The summary of what loaded (pure: from the plan, the loaded parts and the state dir report). */
export function checkSummary(plan: ServePlan, loaded: Refusables, stateDir: StateDirReport, env: Env): CheckSummary {
  const safe = redactConfig(loaded.config);
  const mode = plan.mode;
  return {
    config: loaded.configPath,
    mode:
      mode.kind === "stdio"
        ? { kind: "stdio", session: mode.session }
        : {
            kind: "daemon",
            listen: listenUrl(mode.listen.hostname, mode.listen.port),
            metrics_listen: mode.metricsListen === null ? null : listenUrl(mode.metricsListen.hostname, mode.metricsListen.port),
            callback_host: plan.callbackUrl === null ? null : plan.callbackUrl.host,
            max_sessions: mode.maxSessions,
            session_idle_timeout_secs: mode.idleTimeoutSecs,
          },
    model: { provider: safe.model.provider, description: describeModel(safe.model), api_key_env: modelApiKeyVariable(safe.model) ?? null },
    servers: safe.mcp_servers.map((s) =>
      s.transport === "stdio" ? { name: s.name, transport: "stdio", command: s.command } : { name: s.name, transport: "http", host: hostOf(s.url) },
    ),
    subscriptions: safe.mcp_servers.flatMap((s) =>
      (s.events ?? []).map((e) => ({ server: s.name, event: e.name, delivery: e.delivery ?? "negotiate", action: e.action })),
    ),
    policy: loaded.policy === null ? null : { path: loaded.policy.path, digest: loaded.policy.digest },
    evidence:
      safe.evidence === undefined
        ? null
        : { event_source: safe.evidence.event_source, decision_log: safe.evidence.decision_log, signing_key_id: loaded.signer === null ? null : loaded.signer.keyid.slice(0, 16) },
    state_dir: { path: stateDir.path, exists: stateDir.exists },
    tuning: setKnobs(loaded.tuning, env),
    warnings: stateDir.warnings,
  };
}

/** The text summary: `key: value` lines, one item a line; values quoted when not plain. */
export function renderCheckSummary(s: CheckSummary): string {
  const lines = ["vigil serve --check-config: ok", `config: ${shown(s.config)}`];
  const m = s.mode;
  if (m.kind === "stdio") lines.push(`mode: stdio, session ${shown(m.session)}`);
  else {
    const extras = [
      m.metrics_listen === null ? null : `metrics on ${m.metrics_listen}`,
      m.callback_host === null ? null : `webhook callbacks via ${shown(m.callback_host)}`,
      `max ${m.max_sessions} sessions`,
      `idle timeout ${m.session_idle_timeout_secs === 0 ? "never" : `${m.session_idle_timeout_secs} s`}`,
    ].filter((x) => x !== null);
    lines.push(`mode: daemon, listen ${m.listen}, ${extras.join(", ")}`);
  }
  lines.push(`model: ${shown(s.model.description)}${s.model.api_key_env === null ? "" : `, API key from $${s.model.api_key_env}`}`);
  if (s.servers.length === 0) lines.push("servers: none");
  for (const v of s.servers) {
    lines.push(`server: ${shown(v.name)} ${v.transport} ${v.transport === "stdio" ? `command ${shown(v.command)}` : `host ${shown(v.host)}`}`);
  }
  if (s.subscriptions.length === 0) lines.push("subscriptions: none");
  for (const sub of s.subscriptions) lines.push(`subscription: ${shown(sub.server)} ${shown(sub.event)} delivery ${sub.delivery}, action ${sub.action}`);
  lines.push(s.policy === null ? "policy: none (every tool call is allowed)" : `policy: ${shown(s.policy.path)} ${s.policy.digest}`);
  if (s.evidence === null) lines.push("evidence: off");
  else {
    const key = s.evidence.signing_key_id === null ? "unsigned" : `signing key ${s.evidence.signing_key_id}`;
    lines.push(`evidence: ${shown(s.evidence.event_source)}, decision log ${s.evidence.decision_log ? "on" : "off"}, ${key}`);
  }
  lines.push(`state: ${shown(s.state_dir.path)} (${s.state_dir.exists ? "exists" : "will be created"})`);
  const knobs = Object.entries(s.tuning).map(([k, v]) => `${k}=${v}`);
  lines.push(`tuning: ${knobs.length === 0 ? "defaults" : knobs.join(" ")}`);
  return lines.join("\n");
}

/** The knobs whose variable is set (non-empty) in `env`, with the value in force. */
function setKnobs(tuning: Refusables["tuning"], env: Env): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(TUNING_KNOBS) as TuningKnob[]) {
    const name = TUNING_KNOBS[key].env;
    if ((env[name] ?? "") !== "") out[name] = tuning[key];
  }
  return out;
}

/** A config-supplied string as one printable token: quoted (JSON) when it holds blanks, quotes or control characters. */
function shown(value: string): string {
  if (value === REDACTED) return value;
  return /^[\x21-\x7e]+$/.test(value) && !value.includes('"') ? value : JSON.stringify(value);
}

/** The host (and port) of an HTTP server's URL: never its path, query or credentials. A redacted URL stays redacted. */
function hostOf(url: string): string {
  return url === REDACTED || !URL.canParse(url) ? REDACTED : new URL(url).host;
}
