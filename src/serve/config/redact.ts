/**
 * Which parts of a loaded config are secret, and copies of it that are safe to print or log.
 *
 * Secret: every `headers` value and every stdio `env` value (always, by position); any value that a
 * `${VAR}` expansion produced; a URL carrying user:password credentials. Which of the model's
 * values can be secret is its provider's to say (models/registry.ts). The model's API key is
 * never in the config at all (see `modelApiKey`). The expanded paths are remembered per config
 * object by the loader; a config built elsewhere (or a copy) still gets the by-position redaction.
 */
import { formatPath } from "../../shared/issues.ts";
import { REDACTED } from "../../shared/scrub.ts";
import type { PathSegment } from "../../shared/document-path.ts";
import { describeModel, redactModel } from "../models/registry.ts";
import type { ServeConfig } from "./schema.ts";

const secretPathsByConfig = new WeakMap<ServeConfig, ReadonlySet<string>>();

/** Records the paths of `config` that hold secrets beyond the by-position ones. Loader use. */
export function registerSecretPaths(config: ServeConfig, paths: Iterable<string>): void {
  secretPathsByConfig.set(config, new Set(paths));
}

/** True when the URL embeds credentials (`https://user:pass@host`). */
export function hasUrlCredentials(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const parsed = new URL(url);
  return parsed.username !== "" || parsed.password !== "";
}

/** A deep copy with every secret value replaced by "<redacted>". Never mutates `config`. */
export function redactConfig(config: ServeConfig): ServeConfig {
  const paths = secretPathsByConfig.get(config) ?? new Set<string>();
  const hide = (value: string, segments: PathSegment[], always = false): string =>
    always || paths.has(formatPath(segments)) ? REDACTED : value;
  const hideUrl = (value: string, segments: PathSegment[]) => hide(value, segments, hasUrlCredentials(value));
  const hideMap = (m: Record<string, string>) =>
    Object.fromEntries(Object.keys(m).map((k) => [k, REDACTED]));

  const copy = structuredClone(config);
  copy.model = redactModel(copy.model, { value: (value, segments) => hide(value, segments), url: hideUrl });
  copy.mcp_servers.forEach((server, i) => {
    const at: PathSegment[] = ["mcp_servers", i];
    if (server.transport === "http") {
      server.url = hideUrl(server.url, [...at, "url"]);
      server.headers = hideMap(server.headers);
    } else {
      server.command = hide(server.command, [...at, "command"]);
      server.args = server.args.map((arg, j) => hide(arg, [...at, "args", j]));
      server.env = hideMap(server.env);
    }
  });
  return copy;
}

/**
 * Every value `redactConfig` hides, as it is in `config` (and the password of a URL with
 * credentials, which may be echoed alone): what the loader registers with the scrubber
 * (shared/scrub.ts), so the two can never disagree about what is secret.
 */
export function secretValues(config: ServeConfig): string[] {
  const out: string[] = [];
  const stack: [unknown, unknown][] = [[config, redactConfig(config)]];
  while (stack.length > 0) {
    const [value, shown] = stack.pop()!;
    if (typeof value === "string") {
      if (shown === REDACTED && value !== REDACTED) out.push(value, ...urlPassword(value));
    } else if (typeof value === "object" && value !== null && typeof shown === "object" && shown !== null) {
      for (const key of Object.keys(value)) stack.push([(value as Record<string, unknown>)[key], (shown as Record<string, unknown>)[key]]);
    }
  }
  return out;
}

function urlPassword(value: string): string[] {
  if (!hasUrlCredentials(value)) return [];
  const { password } = new URL(value);
  try {
    return password === "" ? [] : [password, decodeURIComponent(password)];
  } catch {
    return [password];
  }
}

const MAX_SERVERS_DESCRIBED = 8;

/**
 * One line for the startup log, built from the redacted copy, for example
 * `model=openai:qwen3@http://127.0.0.1:11434/v1 servers=tickets(http,1 event),fs(stdio) policy=/etc/vigil/policy.yaml evidence=vigil://host/agent`.
 * With a signing key it adds `signing_key=<the first 16 hex digits of its key id>` (never the
 * key's path or contents): `signingKeyId` is the loaded key's id.
 */
export function describeConfig(config: ServeConfig, signingKeyId?: string): string {
  const safe = redactConfig(config);
  const model = describeModel(safe.model);
  const servers = safe.mcp_servers.slice(0, MAX_SERVERS_DESCRIBED).map((s) => {
    const n = s.events?.length ?? 0;
    return `${s.name}(${s.transport}${n === 0 ? "" : `,${n} event${n === 1 ? "" : "s"}`})`;
  });
  const more = safe.mcp_servers.length - servers.length;
  if (more > 0) servers.push(`+${more} more`);
  const parts = [`model=${model}`, `servers=${servers.length === 0 ? "none" : servers.join(",")}`];
  if (safe.policy !== undefined) parts.push(`policy=${safe.policy}`);
  if (safe.evidence !== undefined) parts.push(`evidence=${safe.evidence.event_source}`);
  if (signingKeyId !== undefined) parts.push(`signing_key=${signingKeyId.slice(0, 16)}`);
  return parts.join(" ").replace(/[\r\n]/g, " ");
}
