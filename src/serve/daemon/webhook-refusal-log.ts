/**
 * Refused webhook deliveries on stderr, at most one line per minute per kind: a hostile or
 * misconfigured sender must not be able to flood the log, and the counts still say how much was
 * refused. A line names the kind and the count only — never a token, a header value or a body.
 */
import type { WebhookRefusal } from "../../events/webhook/types.ts";
import type { LogFields } from "../../shared/log.ts";

export const REFUSAL_LOG_INTERVAL_MS = 60_000;

export class RefusalLog {
  private readonly last = new Map<WebhookRefusal, number>();
  private readonly unreported = new Map<WebhookRefusal, number>();

  constructor(
    private readonly now: () => number,
    private readonly log: (line: string, fields?: LogFields) => void,
  ) {}

  note(why: WebhookRefusal): void {
    const count = (this.unreported.get(why) ?? 0) + 1;
    const at = this.now();
    const last = this.last.get(why);
    if (last !== undefined && at - last < REFUSAL_LOG_INTERVAL_MS) {
      this.unreported.set(why, count);
      return;
    }
    this.last.set(why, at);
    this.unreported.delete(why);
    const since = last === undefined ? "" : " since the last line about it";
    this.log(`serve: webhook receiver refused ${count} deliver${count === 1 ? "y" : "ies"} (${why})${since}`, { level: "warn", code: `webhook_${why}` });
  }
}
