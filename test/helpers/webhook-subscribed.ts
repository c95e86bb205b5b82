/**
 * The common start of a webhook e2e test: the daemon with one configured webhook subscription
 * (`ticket.updated` unless `events` says otherwise), subscribed — vigil announced it on the events
 * session's frames and the fixture holds its hook — and one-attempt emits to that hook. Every wait
 * is bounded.
 */
import { expect } from "bun:test";
import { E2E_WAIT_MS } from "./e2e.ts";
import type { EmitAnswer, FixtureHook } from "./events-fixture.ts";
import { EVENTS_SESSION, isStatus } from "./events-serve.ts";
import { type Cleanups, SseReader, framesUrl } from "./serve.ts";
import { waitFor } from "./wait.ts";
import { type WebhookStack, type WebhookStackOptions, startWebhookStack } from "./webhook-serve.ts";

export const TICKETS = "ticket.updated";
export const WEBHOOK_TICKETS = [{ name: TICKETS, delivery: "webhook" as const }];

export interface Subscribed {
  stack: WebhookStack;
  /** The events session's frames since seq 0. */
  sse: SseReader;
  hook: FixtureHook;
}

export async function subscribedStack(cleanups: Cleanups, o: Partial<WebhookStackOptions> = {}): Promise<Subscribed> {
  const stack = await startWebhookStack(cleanups, { events: WEBHOOK_TICKETS, ...o });
  const sse = await SseReader.open(cleanups, framesUrl(stack.base, EVENTS_SESSION, 0));
  await sse.until(isStatus("subscribed"), E2E_WAIT_MS);
  const hook = await waitFor(async () => (await stack.fixture.state()).hooks[0], { timeoutMs: E2E_WAIT_MS, label: "fixture: a webhook subscription" });
  return { stack, sse, hook };
}

/** One emit of the fixture to the one hook (one attempt, no retries); resolves with the receiver's answer. */
export async function emitOnce(stack: WebhookStack, o: Record<string, unknown> = {}): Promise<{ eventId: string; status: number }> {
  const answer = await stack.fixture.control<EmitAnswer>("emit", { name: TICKETS, no_retry: true, ...o });
  expect(answer.deliveries).toHaveLength(1);
  return { eventId: answer.event_id, status: answer.deliveries[0]!.status };
}
