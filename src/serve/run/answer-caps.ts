/**
 * What a model may return in one turn (issue 11 item 8). Every part of an answer that becomes a
 * frame or goes back to a provider or an MCP server is bounded here, once, where the answer enters
 * the run loop, whatever the provider. An answer over a cap fails its run with the stable code
 * `model_answer_too_large`; nothing of that answer is recorded, broadcast or kept in the history.
 *
 * Why these numbers: a frame is stored as one transcript record of at most 8 MiB (state/transcript.ts),
 * and JSON may spend up to 6 bytes on one UTF-16 code unit (`\u0000`). 1 Mi characters of text is
 * therefore at most 6 MiB as a `message` frame: every answer within the caps can be stored, so a
 * client never sees a frame the transcript does not hold. It is also the cap on a prompt's message
 * (protocol/commands.ts), so an answer can be as long as a question. Tool names offered are at most
 * 64 characters (mcp/tool-names.ts); a longer name is answered "unknown tool" like any other up to
 * 1,024, and beyond that it is not a name. Lengths are UTF-16 code units, like every limit of serve.
 */
import { type ModelTurn, isToolArgumentsError } from "../models/types.ts";

export const MODEL_ANSWER_CAPS = {
  /** The text of one answer. */
  textChars: 1024 * 1024,
  /** Tool calls in one answer. */
  toolCalls: 128,
  /** A tool call's name. */
  toolNameChars: 1024,
  /** A tool call's id (it is sent back to the provider with the result). */
  toolCallIdChars: 1024,
  /** A tool call's arguments, as JSON text (or the string sent, when it is not JSON). */
  toolArgumentsChars: 1024 * 1024,
} as const;

export type ModelAnswerCaps = { readonly [K in keyof typeof MODEL_ANSWER_CAPS]: number };

export const MODEL_ANSWER_TOO_LARGE = "model_answer_too_large";

/** A model answer over one of the caps; the run fails with its message and code. */
export class ModelAnswerTooLargeError extends Error {
  readonly code = MODEL_ANSWER_TOO_LARGE;
  constructor(message: string) {
    super(message);
    this.name = "ModelAnswerTooLargeError";
  }
}

/** The first cap `turn` is over, said in one line (sizes only, never the content), or null. */
export function modelAnswerProblem(turn: ModelTurn, caps: ModelAnswerCaps = MODEL_ANSWER_CAPS): string | null {
  const over = (what: string, size: number, cap: number) =>
    `the model's answer is too large: ${what} has ${size} characters, at most ${cap} are accepted`;
  if (turn.text !== null && turn.text.length > caps.textChars) return over("its text", turn.text.length, caps.textChars);
  if (turn.toolCalls.length > caps.toolCalls) {
    return `the model's answer is too large: it asks for ${turn.toolCalls.length} tool calls, at most ${caps.toolCalls} are accepted`;
  }
  for (const [i, call] of turn.toolCalls.entries()) {
    if (call.name.length > caps.toolNameChars) return over(`the name of tool call ${i + 1}`, call.name.length, caps.toolNameChars);
    if (call.id.length > caps.toolCallIdChars) return over(`the id of tool call ${i + 1}`, call.id.length, caps.toolCallIdChars);
    const args = argumentsChars(call.arguments, caps.toolArgumentsChars);
    if (args > caps.toolArgumentsChars) return over(`the arguments of tool call ${i + 1}`, args, caps.toolArgumentsChars);
  }
  return null;
}

/** The arguments' length as JSON text; a string is measured before anything is serialised. */
function argumentsChars(args: unknown, cap: number): number {
  if (isToolArgumentsError(args)) return args.raw.length;
  if (typeof args === "string" && args.length > cap) return args.length;
  return JSON.stringify(args ?? {})?.length ?? 0;
}
