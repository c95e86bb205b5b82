/**
 * `vigil serve --log-format text|json` (issue 15 item 3) and its environment twin
 * `VIGIL_LOG_FORMAT`: how every line serve writes on stderr is shaped (shared/log.ts).
 *
 * Decision: both knobs, the flag winning. The variable is applied by the command adapter before
 * the argv is scanned, so a unit file that sets `Environment=VIGIL_LOG_FORMAT=json` gets even a
 * refused flag as a JSON line; the flag is applied right after the scan, before the other flags
 * are judged and before the config is loaded, so every refusal after it is a JSON line too. A
 * value other than `text` or `json` is refused (the flag's as a usage error, the variable's as a
 * config error, like the other `VIGIL_*` knobs), in text: what was asked for is not known then.
 * The variable is checked whenever it is set, even when the flag overrides it: a typo there would
 * otherwise surface only on the day the flag is dropped.
 */
import { VigilError, usageError } from "../shared/errors.ts";
import { LOG_FORMATS, type LogFormat, parseLogFormat, setLogFormat } from "../shared/log.ts";

export const LOG_FORMAT_ENV = "VIGIL_LOG_FORMAT";

const expected = LOG_FORMATS.map((f) => JSON.stringify(f)).join(" or ");
const shown = (raw: string) => JSON.stringify(raw.slice(0, 32));

/** `--log-format` (undefined when not given); a usage error for any other value. */
export function planLogFormat(raw: string | undefined): LogFormat | undefined {
  if (raw === undefined) return undefined;
  const format = parseLogFormat(raw);
  if (format === null) throw usageError(`--log-format: expected ${expected} (got ${shown(raw)})`);
  return format;
}

/**
 * `VIGIL_LOG_FORMAT` (undefined when unset or empty); a config error for any other value. Case
 * and surrounding blanks are ignored, as for the other `VIGIL_*` word knobs (`VIGIL_LOG_LEVEL`,
 * `VIGIL_METRICS`); the flag, like every flag value, is exact.
 */
export function logFormatFromEnv(env: Readonly<Record<string, string | undefined>>): LogFormat | undefined {
  const raw = env[LOG_FORMAT_ENV];
  if (raw === undefined || raw.trim() === "") return undefined;
  const format = parseLogFormat(raw.trim().toLowerCase());
  if (format === null) throw new VigilError("config_invalid", `${LOG_FORMAT_ENV}: expected ${expected} (got ${shown(raw)})`);
  return format;
}

/** Applies a chosen format; undefined leaves the one in force (the variable's, or text). */
export function useLogFormat(format: LogFormat | undefined): void {
  if (format !== undefined) setLogFormat(format);
}
