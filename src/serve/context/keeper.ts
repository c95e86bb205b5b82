/**
 * Keeps one run's model requests within the context budget (issue 12 item A). Before each turn:
 *
 * 1. History: when the request would pass the trigger, the oldest runs are summarized (compact.ts)
 *    and a `compaction` frame records the summary and the transcript range it replaces, so the
 *    session and a later restart continue from [summary + recent runs].
 * 2. The run's own growth (tool results, steers): if still over, the run's oldest exchanges
 *    (after its prompt) are summarized the same way, for this run only; its messages are not yet
 *    in the transcript's history, so no frame is written for them.
 * 3. Last resort, when single messages are too large (a huge prompt or tool result): their texts
 *    are cut for this request, with a marker, so the request still fits.
 *
 * What to keep is decided by plan.ts (pure); this file does the I/O around it.
 */
import type { ChatMessage, ChatModel, ToolSpec } from "../models/types.ts";
import { type CompactionFrame, compactionFrame } from "../protocol/frames.ts";
import { logDebug } from "../../shared/log.ts";
import { type HistoryBlock, applyCompaction, blockTokens, flatten, summaryMessage } from "./blocks.ts";
import { BYTES_PER_TOKEN, type ContextBudget } from "./budget.ts";
import { cutText, summarize } from "./compact.ts";
import { REQUEST_OVERHEAD_TOKENS, messageTokens, messagesTokens, textBytes, toolsTokens } from "./estimate.ts";
import { capsWithin, planCompaction, sum } from "./plan.ts";

export interface KeeperOptions {
  chat: ChatModel;
  budget: ContextBudget;
  systemPrompt?: string;
  /** The session's history when the run started. */
  blocks: readonly HistoryBlock[];
  /** The transcript's last seq when the run was created: every later record is this run's. */
  historySeq: number;
  /** The run's new messages; they stay first in `own` and are never summarized. */
  prompt: readonly ChatMessage[];
  emit(frame: CompactionFrame): void | Promise<void>;
}

export class ContextKeeper {
  /** The run's messages as the model sees them: its prompt, then what the run added. */
  readonly own: ChatMessage[];
  private blocks: HistoryBlock[];
  private readonly system: ChatMessage | null;
  private ownSummary: ChatMessage | null = null;

  constructor(private readonly o: KeeperOptions) {
    this.own = [...o.prompt];
    this.blocks = [...o.blocks];
    this.system = o.systemPrompt === undefined || o.systemPrompt === "" ? null : { role: "system", text: o.systemPrompt };
  }

  add(m: ChatMessage): void {
    this.own.push(m);
  }

  /** The messages of the next request, compacted (and, as a last resort, cut) to fit. */
  async request(specs: readonly ToolSpec[], signal: AbortSignal): Promise<ChatMessage[]> {
    const { budget } = this.o;
    const fixed = REQUEST_OVERHEAD_TOKENS + toolsTokens(specs) + (this.system === null ? 0 : messageTokens(this.system));
    const history = planCompaction({ budget, fixed, units: this.blocks.map(blockTokens), tail: messagesTokens(this.own) });
    // A summary alone is not summarized again (it is within its budget): cutting is what is left.
    if (history.kind === "compact" && !(history.replace === 1 && this.blocks[0]?.summary)) await this.compactHistory(history.replace, signal);

    const exchanges = this.exchanges();
    const prompt = messagesTokens(this.own.slice(0, this.o.prompt.length));
    const historyTokens = sum(this.blocks.map(blockTokens));
    const own = planCompaction({ budget, fixed: fixed + historyTokens, units: exchanges.map((e) => e.tokens), tail: prompt });
    const ownSummary = own.kind === "compact" && own.replace === 1 && this.own[this.o.prompt.length] === this.ownSummary;
    if (own.kind === "compact" && !ownSummary) await this.compactOwn(exchanges[own.replace - 1]!.end, signal);

    return this.cutToFit(fixed - (this.system === null ? 0 : messageTokens(this.system)));
  }

  private async compactHistory(replace: number, signal: AbortSignal): Promise<void> {
    const replaced = this.blocks.slice(0, replace);
    const first = this.blocks[replace];
    const messages = flatten(replaced);
    const count = messages.length - (replaced[0]?.summary ? 1 : 0);
    const s = await summarize(this.o.chat, messages, count, this.o.budget, signal);
    const frame = compactionFrame(s.summary, replaced[0]!.fromSeq, first === undefined ? this.o.historySeq : first.fromSeq - 1);
    // Recorded before the request that relies on it: what the model is sent, a restart rebuilds.
    await this.o.emit(frame);
    this.blocks = applyCompaction(this.blocks, frame);
    logDebug(`serve: context: ${count} earlier messages compacted (${s.by}), seq ${frame.from_seq}..${frame.to_seq}`, { code: "context_compacted" });
  }

  /** Replaces the run's messages from after its prompt up to `end` by one summary message. */
  private async compactOwn(end: number, signal: AbortSignal): Promise<void> {
    const start = this.o.prompt.length;
    const messages = this.own.slice(start, end);
    const s = await summarize(this.o.chat, messages, messages.length, this.o.budget, signal);
    this.ownSummary = summaryMessage(s.summary);
    this.own.splice(start, end - start, this.ownSummary);
    logDebug(`serve: context: ${messages.length} messages of the run compacted (${s.by})`, { code: "context_compacted" });
  }

  /** The run's messages after its prompt in whole exchanges (an assistant turn with its tool results). */
  private exchanges(): { end: number; tokens: number }[] {
    const out: { end: number; tokens: number }[] = [];
    for (let i = this.o.prompt.length; i < this.own.length; i++) {
      const m = this.own[i]!;
      const last = out.at(-1);
      if (m.role === "tool" && last !== undefined) {
        last.end = i + 1;
        last.tokens += messageTokens(m);
      } else out.push({ end: i + 1, tokens: messageTokens(m) });
    }
    return out;
  }

  /** The request's messages, with over-long texts cut when nothing else brought it within the trigger. */
  private cutToFit(fixed: number): ChatMessage[] {
    const messages = [...(this.system === null ? [] : [this.system]), ...flatten(this.blocks), ...this.own];
    const sizes = messages.map(messageTokens);
    const room = this.o.budget.trigger - fixed;
    if (sum(sizes) <= room) return messages;
    const caps = capsWithin(sizes, room);
    logDebug(`serve: context: message texts cut to fit the model's context (${sum(sizes)} > ${room} tokens)`, { code: "context_texts_cut" });
    return messages.map((m, i) => {
      if (caps[i]! >= sizes[i]! || m.text === null) return m;
      const encoded = textBytes(m.text);
      const textCap = Math.max(0, caps[i]! * BYTES_PER_TOKEN - (sizes[i]! * BYTES_PER_TOKEN - encoded));
      return { ...m, text: cutText(m.text, encoded, textCap) } as ChatMessage;
    });
  }
}
