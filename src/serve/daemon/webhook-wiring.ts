/**
 * What the daemon needs of webhook delivery (serve.md §6 item 4): the receiver on its listener and
 * the restart window around the boot sessions (events design notes §4.5). Both exist only when
 * the events service can deliver by webhook (`--listen` and `--mcp-events-callback-url`).
 */
import type { WebhookRoutes } from "../../events/webhook/types.ts";
import type { ServeApp } from "../types.ts";
import { type WebhookReceiver, createWebhookReceiver } from "./webhook-receiver.ts";

export interface DaemonWebhook {
  receiver: WebhookReceiver;
  routes: WebhookRoutes;
  /**
   * Runs the wake of the boot sessions with every unknown token held (503) meanwhile: each boot
   * session's hub reserves the tokens it will resubscribe while it opens, so a retry that beats
   * its session is told to come back, not to stop (never past the restore window: routes.ts).
   */
  restoring(wake: () => Promise<void>): Promise<void>;
}

export function daemonWebhook(app: ServeApp): DaemonWebhook | null {
  const ability = app.events.webhook;
  const callbackUrl = app.events.callbackBase;
  if (!ability.available || callbackUrl === null) return null;
  const routes = ability.routes;
  // Held from now, before the listener accepts its first delivery.
  routes.beginRestoring();
  return {
    routes,
    receiver: createWebhookReceiver({
      routes,
      keys: ability.keys,
      callbackUrl,
      bodyTimeoutMs: app.tuning.bodyTimeoutMs,
      answerTimeoutMs: app.tuning.ackTimeoutMs,
    }),
    async restoring(wake) {
      try {
        await wake();
      } finally {
        routes.endRestoring();
      }
    },
  };
}
