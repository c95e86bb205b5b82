/**
 * Bounds of the `vigil serve` config format (serve.md §2); schema.ts applies them. The bounds of
 * an MCP server entry, of an `events` list and of each model provider's `model` mapping belong to
 * the parts that define those shapes; this is every bound of the file in one place (characters
 * are UTF-16 code units).
 */
import { EVENTS_CONFIG_LIMITS } from "../../events/config.ts";
import { MCP_SERVER_LIMITS } from "../../mcp/server-config.ts";
import { MODEL_LIMITS } from "../models/registry.ts";

export const CONFIG_LIMITS = {
  ...MCP_SERVER_LIMITS,
  ...EVENTS_CONFIG_LIMITS,
  /** The config file, checked before it is read. */
  fileBytes: 1024 * 1024,
  servers: 64,
  eventSourceChars: 2048,
  systemPromptChars: 65536,
  /** evidence.checkpoint_every and evidence.checkpoint_seconds (one day). */
  checkpointEveryMax: 1_000_000_000,
  checkpointSecondsMax: 86_400,
  /** The `model` mapping's bounds, by provider (`timeout_ms`: openai 1 h, command 24 h). */
  models: MODEL_LIMITS,
} as const;
