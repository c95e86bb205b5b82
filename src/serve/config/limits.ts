/** Bounds of the `vigil serve` config format (serve.md §2); schema.ts applies them. */

/** Every bound of the format, in one place (characters are UTF-16 code units). */
export const CONFIG_LIMITS = {
  /** The config file, checked before it is read. */
  fileBytes: 1024 * 1024,
  servers: 64,
  eventsPerServer: 256,
  headers: 64,
  envEntries: 256,
  /** Elements of a stdio server's `args` and of a command model's `command`. */
  argv: 256,
  /** Server names: `^[A-Za-z0-9_-]{1,64}$`, so `<server>__<tool>` has one reading. */
  serverNameChars: 64,
  eventNameChars: 256,
  modelNameChars: 256,
  urlChars: 2048,
  headerNameChars: 256,
  headerValueChars: 8192,
  envNameChars: 256,
  /** An env value, an argv element, a stdio command. */
  valueChars: 32768,
  /** `policy` and `cwd`. */
  pathChars: 4096,
  eventSourceChars: 2048,
  systemPromptChars: 65536,
  instructionsChars: 4096,
  /** `model.timeout_ms` for `openai` (1 h) and for `command` (24 h). */
  openaiTimeoutMs: 3_600_000,
  commandTimeoutMs: 86_400_000,
  maxTurns: 64,
} as const;
