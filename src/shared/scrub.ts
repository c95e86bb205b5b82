/**
 * The one scrubber (serve.md §2: "a secret never appears in a frame, a log line or an error
 * message"). Text from outside — an MCP server's errors and their `data`, transport and HTTP error
 * bodies, tool results, a model provider's errors, a config problem — passes through it where it
 * enters vigil, before it can reach a frame, a log line, a state file or an error message.
 *
 * The secrets are what vigil was configured to hold for others: HTTP header values (and the token
 * after a `Bearer `-style scheme), stdio `env` values, URL credentials, every `${VAR}` value
 * substituted into the config, the model's API key. The config loader, the MCP server pool and the
 * model providers register them once, process-wide (`registerSecrets`); `scrubText` and
 * `scrubValue` apply all of them, so a server that echoes another server's token (or the model's
 * key) is scrubbed too. `logLine` applies the same scrubber to every line as a last guard.
 *
 * Each secret is also matched as it appears inside a JSON string (escaped) and URL-encoded.
 *
 * Minimum length: values shorter than MIN_SECRET_CHARS are not scrubbed. Every stdio `env` value
 * is secret by position, and short ones are settings (`1`, `true`, `info`, `debug`, `ro`):
 * replacing them would garble ordinary words in every message. Credentials are longer than that
 * (API keys, bearer tokens), and a value of fewer characters is not a credential worth the name.
 */
import { mapStrings } from "./map-strings.ts";

/** What a secret is replaced by. */
export const REDACTED = "<redacted>";

/**
 * Webhook secrets (`whsec_` + base64) are scrubbed by their shape, not registered one by one: serve
 * mints a new one per subscription at every refresh, and a set that grows for months is what the
 * scrubber must not be. A server that echoes one (in an error, a termination) is scrubbed anyway.
 */
const WEBHOOK_SECRET_PREFIX = "whsec_";
const WEBHOOK_SECRET = /whsec_[A-Za-z0-9+/=_-]{8,}/g;

/** Shorter values are not scrubbed (see the header). */
export const MIN_SECRET_CHARS = 8;

/** What stands for a part of a value that was not scrubbed because it lies beyond the bounds. */
export const TRUNCATED = "<truncated>";

export interface ScrubLimits {
  /** Containers nested deeper than this are replaced by TRUNCATED. */
  maxDepth: number;
  /** Nodes (containers, strings, numbers…) visited at most; a container whose members do not fit is replaced. */
  maxNodes: number;
}

export const SCRUB_LIMITS: ScrubLimits = { maxDepth: 64, maxNodes: 100_000 };

/** A fixed set of secrets, applied to text and to JSON-like values. Pure. */
export class Scrubber {
  /** Every form of every secret, longest first (so a header value goes before its token). */
  private readonly forms: readonly string[];

  constructor(secrets: Iterable<string>) {
    const forms = new Set<string>();
    for (const secret of secrets) for (const form of secretForms(secret)) forms.add(form);
    this.forms = [...forms].sort((a, b) => b.length - a.length);
  }

  get empty(): boolean {
    return this.forms.length === 0;
  }

  /** `text` with every occurrence of every secret, and every webhook secret, replaced by REDACTED. */
  text(text: string): string {
    let out = text;
    for (const form of this.forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out.includes(WEBHOOK_SECRET_PREFIX) ? out.replace(WEBHOOK_SECRET, REDACTED) : out;
  }

  /**
   * `text` cut to its first `maxChars` characters, scrubbed before it is cut: a secret that begins
   * before the cut is replaced whole (so no prefix of it is left at the end), and text after the
   * cut never slides in when an earlier secret shrinks to REDACTED. Callers bound the work by
   * passing a window a little longer than the cut (the cut plus the longest secret they expect).
   * A secret that may run on past the end of the window from before the cut is replaced too.
   */
  cut(text: string, maxChars: number): { text: string; cut: boolean } {
    if (text.length <= maxChars) return { text: this.text(text), cut: false };
    const runOn = this.runOnStart(text, maxChars);
    if (runOn === null) return { text: this.text(text.slice(0, this.straddleEnd(text, maxChars))), cut: true };
    return { text: `${this.text(text.slice(0, this.straddleEnd(text, runOn)))}${REDACTED}`, cut: true };
  }

  /** Where a cut at `at` must move to so that no secret is split by it: past every occurrence that straddles it. */
  private straddleEnd(text: string, at: number): number {
    let end = at;
    for (const form of this.forms) {
      // Occurrences that straddle `at` start in (at - form.length, at).
      for (let i = text.indexOf(form, Math.max(0, at - form.length + 1)); i >= 0 && i < at; i = text.indexOf(form, i + 1)) {
        end = Math.max(end, i + form.length);
      }
    }
    return end;
  }

  /**
   * The start, before `before`, of a secret that the end of `text` cuts short (what follows is a
   * prefix of it): the window ended inside it, so it may run on. Only secrets longer than the
   * text after `before` can do that, so a window with a margin over the longest secret skips this.
   */
  private runOnStart(text: string, before: number): number | null {
    let start: number | null = null;
    for (const form of this.forms) {
      for (let i = Math.max(0, text.length - form.length + 1); i < (start ?? before); i++) {
        if (form.startsWith(text.slice(i))) {
          start = i;
          break;
        }
      }
    }
    return start;
  }

  /**
   * A copy of a JSON-like value with every string (object keys included) scrubbed. Iterative and
   * bounded by `limits`: what lies deeper than maxDepth, or past maxNodes, is replaced by TRUNCATED
   * rather than passed on unchecked. With no secret at all the value is returned as it is.
   */
  value(input: unknown, limits: ScrubLimits = SCRUB_LIMITS): unknown {
    if (this.empty) return input;
    return mapStrings(input, (text) => this.text(text), { ...limits, deep: TRUNCATED, tooMany: TRUNCATED });
  }
}

/** The forms of one secret worth matching: as is, its token after a scheme, JSON-escaped, URL-encoded. */
export function secretForms(secret: string): string[] {
  const base = [secret];
  // `Bearer tok…`, `Basic dXNl…`: the credential alone may be echoed.
  const space = secret.indexOf(" ");
  if (space > 0) base.push(secret.slice(space + 1).trim());
  const out: string[] = [];
  for (const value of base) {
    if (value.length < MIN_SECRET_CHARS) continue;
    out.push(value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value));
  }
  return out;
}

// ---- the process-wide set ----

const registered = new Set<string>();
let current: Scrubber | null = null;

/** Adds secrets to the process-wide set (idempotent; values too short to scrub are ignored by the scrubber). */
export function registerSecrets(values: Iterable<string>): void {
  for (const value of values) {
    if (value.length >= MIN_SECRET_CHARS && !registered.has(value)) {
      registered.add(value);
      current = null;
    }
  }
}

/** The scrubber of every secret registered so far. */
export function processScrubber(): Scrubber {
  current ??= new Scrubber(registered);
  return current;
}

/** `text` with every registered secret replaced by REDACTED. */
export function scrubText(text: string): string {
  return processScrubber().text(text);
}

/** `text` cut to `maxChars` characters after scrubbing it of every registered secret (see Scrubber.cut). */
export function scrubAndCut(text: string, maxChars: number): { text: string; cut: boolean } {
  return processScrubber().cut(text, maxChars);
}

/** A copy of `value` with every string scrubbed of every registered secret (bounded, see Scrubber.value). */
export function scrubValue<T>(value: T): T {
  return processScrubber().value(value) as T;
}
