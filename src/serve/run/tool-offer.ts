/**
 * A session's offer of tools to the model, held within the tool schemas' budget (context/tool-fit.ts).
 * It remembers what the last offer left out, so the gateway refuses a call to a tool the model was
 * not offered, and logs a line only when what is shortened or left out changes — not at every run.
 */
import { logLine } from "../../shared/log.ts";
import { type ToolFit, fitTools } from "../context/tool-fit.ts";
import type { ToolSpec } from "../models/types.ts";

/** Names listed in one log line at most (the rest are counted). */
const NAMES_SHOWN = 20;
const NAME_CHARS = 100;

export class ToolOffer {
  private withheld = new Set<string>();
  private reported = FITS;

  constructor(
    private readonly maxTokens: number,
    private readonly sessionId: string,
  ) {}

  /** The specs to send to the model; logs when the offer changed. */
  offer(specs: readonly ToolSpec[]): ToolSpec[] {
    const fit = fitTools(specs, this.maxTokens);
    this.withheld = new Set(fit.omitted.map((o) => o.name));
    const report = offerReport(fit, this.maxTokens);
    if (report.key !== this.reported) {
      this.reported = report.key;
      logLine(`serve: session ${JSON.stringify(this.sessionId)}: ${report.text}`, { level: "warn", session: this.sessionId, code: "tools_offer_cut" });
    }
    return fit.offered;
  }

  /** The answer to a call of a tool the last offer left out; null when it was offered. */
  refusal(name: string): string | null {
    if (!this.withheld.has(name)) return null;
    return `vigil: tool ${quote(name)} is not offered in this session: its schema does not fit the model's context (model.context_tokens); use one of the tools offered`;
  }
}

const FITS = "fits";

/** What an offer says in the log, and a key that changes only when the offer does. */
export function offerReport(fit: ToolFit, maxTokens: number): { key: string; text: string } {
  const count = fit.offered.length + fit.omitted.length;
  if (fit.shortened.length === 0 && fit.omitted.length === 0) return { key: FITS, text: `tools: all ${count} tools are offered as listed again` };
  const parts = [`tools: the schemas of ${count} tools take ${fit.listedTokens} tokens, over their budget of ${maxTokens} (25 % of model.context_tokens)`];
  if (fit.shortened.length > 0) parts.push(`descriptions shortened: ${names(fit.shortened.map((name) => ({ name })))}`);
  if (fit.omitted.length > 0) {
    const left = fit.omitted.map((o) => ({ name: o.name, note: ` (${o.tokens} tokens)` }));
    parts.push(`left out, their schemas do not fit what is left (they cannot be called): ${names(left)}`);
  }
  const key = JSON.stringify([fit.shortened, fit.omitted.map((o) => o.name)]);
  return { key, text: parts.join("; ") };
}

function names(list: readonly { name: string; note?: string }[]): string {
  const shown = list.slice(0, NAMES_SHOWN).map((n) => `${quote(n.name)}${n.note ?? ""}`).join(", ");
  return list.length > NAMES_SHOWN ? `${shown} and ${list.length - NAMES_SHOWN} more` : shown;
}

function quote(name: string): string {
  return JSON.stringify(name.length > NAME_CHARS ? `${name.slice(0, NAME_CHARS)}…` : name);
}
