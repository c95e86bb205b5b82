/**
 * The plain-text rendering of a conversation for the `command` model (serve.md §5), which reads one
 * prompt on stdin and has no notion of roles or tool calls. Pure.
 */
import type { ChatMessage } from "./types.ts";
import { isToolArgumentsError } from "./types.ts";

/**
 * Renders `messages` as labelled sections separated by blank lines: every system message first (in
 * order), then the other turns in order. Tool calls are shown as `→ name {json}`, tool results are
 * labelled with the tool's name when the call is in the conversation. Deterministic: the same
 * messages always render the same text.
 */
export function renderTranscriptPrompt(messages: readonly ChatMessage[]): string {
  const toolNames = new Map<string, string>();
  for (const m of messages) {
    if (m.role === "assistant") for (const c of m.toolCalls ?? []) toolNames.set(c.id, c.name);
  }
  const system = messages.filter((m) => m.role === "system");
  const rest = messages.filter((m) => m.role !== "system");
  const sections = [...system, ...rest].map((m) => {
    switch (m.role) {
      case "system":
        return `[System]\n${m.text}`;
      case "user":
        return `[User]\n${m.text}`;
      case "tool": {
        const name = toolNames.get(m.toolCallId);
        return `[Tool result${name === undefined ? "" : `: ${name}`} (${m.toolCallId})]\n${m.text}`;
      }
      case "assistant": {
        const lines = m.text === null || m.text === "" ? [] : [m.text];
        for (const c of m.toolCalls ?? []) {
          const args = isToolArgumentsError(c.arguments) ? c.arguments.raw : JSON.stringify(c.arguments ?? {});
          lines.push(`→ ${c.name} ${args} (${c.id})`);
        }
        return `[Assistant]\n${lines.join("\n")}`;
      }
    }
  });
  return `${sections.join("\n\n")}\n`;
}
