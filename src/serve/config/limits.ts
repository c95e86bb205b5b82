/**
 * Bounds of the `vigil serve` config format (serve.md §2); schema.ts applies them. The bounds of
 * an MCP server entry and of an `events` list belong to the parts that define those shapes; this
 * is every bound of the file in one place (characters are UTF-16 code units).
 */
import { EVENTS_CONFIG_LIMITS } from "../../events/config.ts";
import { MCP_SERVER_LIMITS } from "../../mcp/server-config.ts";

export const CONFIG_LIMITS = {
  ...MCP_SERVER_LIMITS,
  ...EVENTS_CONFIG_LIMITS,
  /** The config file, checked before it is read. */
  fileBytes: 1024 * 1024,
  servers: 64,
  modelNameChars: 256,
  eventSourceChars: 2048,
  systemPromptChars: 65536,
  /** `model.timeout_ms` for `openai` (1 h) and for `command` (24 h). */
  openaiTimeoutMs: 3_600_000,
  commandTimeoutMs: 86_400_000,
  maxTurns: 64,
} as const;
