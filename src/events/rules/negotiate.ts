/**
 * Which delivery mode a subscription uses, from what the event's descriptor offers (`delivery`) and
 * what this process can do. Preference follows the design sketch: webhook (the server does the
 * work and no connection has to stay open), then push (one long-lived request), then poll.
 */
import type { WebhookAbility } from "../webhook/types.ts";

export type DeliveryMode = "poll" | "push" | "webhook";

export interface DeliveryAbilities {
  /** true: a listener and a callback URL are configured, so the server can reach us; else the flag(s) to add. */
  webhook: true | { missing: string };
  /** The connection can carry a long-lived streaming request. */
  push: boolean;
}

const PREFERENCE: readonly DeliveryMode[] = ["webhook", "push", "poll"];

/** The known modes in a descriptor's `delivery`, in the server's order, once each. */
export function offeredModes(offered: unknown): DeliveryMode[] {
  if (!Array.isArray(offered)) return [];
  const modes: DeliveryMode[] = [];
  for (const item of offered) {
    // Unknown strings are future modes: not an error, just nothing we can use.
    if ((item === "poll" || item === "push" || item === "webhook") && !modes.includes(item)) modes.push(item);
  }
  return modes;
}

export function chooseDeliveryMode(
  offered: unknown,
  forced: DeliveryMode | undefined,
  can: DeliveryAbilities,
): { mode: DeliveryMode } | { error: string } {
  const modes = offeredModes(offered);
  const list = modes.length > 0 ? modes.join(", ") : "none";
  const usable = (mode: DeliveryMode) => mode === "poll" || can[mode] === true;
  if (forced !== undefined) {
    if (!modes.includes(forced)) return { error: `the server does not offer ${forced} delivery for this event (it offers: ${list})` };
    // Names only what is missing, and only when something is (issue 13).
    if (forced === "webhook" && can.webhook !== true) return { error: `webhook delivery needs ${can.webhook.missing}` };
    if (forced === "push" && !can.push) return { error: "push delivery needs a connection that can stream, and this one cannot" };
    return { mode: forced };
  }
  for (const mode of PREFERENCE) if (modes.includes(mode) && usable(mode)) return { mode };
  // The hint only helps when webhook was on offer: then configuring it would make one fit.
  const hint = modes.includes("webhook") && can.webhook !== true ? `; webhook needs ${can.webhook.missing}` : "";
  return { error: `no compatible delivery mode (the server offers: ${list}${hint})` };
}

/** The negotiation's view of the process's webhook ability. */
export function webhookAbilityOf(ability: WebhookAbility): true | { missing: string } {
  return ability.available ? true : { missing: ability.missing };
}
