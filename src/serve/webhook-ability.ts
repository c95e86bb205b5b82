/**
 * Whether this `vigil serve` process can take webhook deliveries (serve.md §6 item 4): only in
 * daemon mode (a listener the servers can reach) with `--mcp-events-callback-url` (the public base
 * that routes to it). Then the process has one route table and one server-key store, shared by
 * every session's hub and by the receiver on the listener.
 */
import { ServerKeyStore } from "../events/webhook/server-keys.ts";
import { WebhookRouteTable } from "../events/webhook/routes.ts";
import { WEBHOOK_PATH_SEGMENT, type WebhookAbility } from "../events/webhook/types.ts";

/** What stdio mode lacks, and what a daemon without a callback URL lacks (the refusal names it). */
export const WEBHOOK_MISSING = {
  stdio: "serve --listen and --mcp-events-callback-url",
  daemon: "--mcp-events-callback-url",
} as const;

export function webhookAbility(callbackBase: URL | null, daemon: boolean): WebhookAbility {
  if (!daemon) return { available: false, missing: WEBHOOK_MISSING.stdio };
  if (callbackBase === null) return { available: false, missing: WEBHOOK_MISSING.daemon };
  const base = callbackBaseText(callbackBase);
  return {
    available: true,
    routes: new WebhookRouteTable(),
    keys: new ServerKeyStore(),
    callbackUrl: (token) => `${base}${WEBHOOK_PATH_SEGMENT}${token}`,
  };
}

/** The callback base without a trailing slash: `https://edge.example.com/agent/` → `https://edge.example.com/agent`. */
export function callbackBaseText(url: URL): string {
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}
