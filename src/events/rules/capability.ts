/**
 * Does a server offer MCP Events? Read from the raw `initialize` result (the SDK's own parse drops
 * an unknown top-level `events` capability, so it cannot be asked).
 *
 * Servers advertise the extension in two places, and deployed ones often use both: the design
 * sketch (and ChatGPT) puts it at `capabilities.events`, SEP-3415 (and the conformance suite) at
 * `capabilities.extensions["io.modelcontextprotocol/events"]`. Either one counts; clients that read
 * only one location miss real servers.
 */
import { isRecord } from "../../shared/guards.ts";

export const EVENTS_EXTENSION_ID = "io.modelcontextprotocol/events";

export interface EventsCapability {
  supported: boolean;
  /** The server promises `notifications/events/list_changed` (either copy may say so). */
  listChanged: boolean;
}

export function eventsCapability(rawInitializeResult: unknown): EventsCapability {
  const capabilities = objectAt(rawInitializeResult, "capabilities");
  const topLevel = objectAt(capabilities, "events");
  const extension = objectAt(objectAt(capabilities, "extensions"), EVENTS_EXTENSION_ID);
  const settings = [topLevel, extension].filter((s): s is Record<string, unknown> => s !== undefined);
  return {
    supported: settings.length > 0,
    // An empty settings object means "supported, without list-change notifications".
    listChanged: settings.some((s) => s.listChanged === true),
  };
}

/** `value[key]` when both are plain objects (arrays and null are not settings objects). */
function objectAt(value: unknown, key: string): Record<string, unknown> | undefined {
  if (!isRecord(value)) return undefined;
  const inner = Object.hasOwn(value, key) ? value[key] : undefined;
  return isRecord(inner) ? inner : undefined;
}
