/**
 * `vigil_webhook_deliveries_total{status}` (issue 15 item 1): every delivery request the webhook
 * receiver answers is counted by its HTTP status — refusals before the body included — and the
 * receiver document is not a delivery.
 */
import { expect, test } from "bun:test";
import type { Server } from "bun";
import { ServerKeyStore } from "../../../src/events/webhook/server-keys.ts";
import { WebhookRouteTable } from "../../../src/events/webhook/routes.ts";
import { RECEIVER_DOCUMENT_PATH, createWebhookReceiver } from "../../../src/serve/daemon/webhook-receiver.ts";
import { EVENTS } from "../../../src/shared/metrics/catalog.ts";

const callbackUrl = new URL("https://edge.example.com/agent");
const receiver = createWebhookReceiver({ routes: new WebhookRouteTable(), keys: new ServerKeyStore(), callbackUrl, bodyTimeoutMs: 1000, log: () => {} });
const server = { timeout: () => {} } as unknown as Server<undefined>;
const deliveries = (status: number) => EVENTS.webhookDeliveries.at(String(status)).value;

async function answer(method: string, path: string): Promise<number> {
  const url = new URL(path, "http://127.0.0.1");
  const res = await receiver.handle(new Request(url.href, { method, ...(method === "POST" ? { body: "{}" } : {}) }), url, server);
  if (res === null) throw new Error("not a receiver path");
  return res.status;
}

test("answered deliveries are counted by status; the receiver document is not", async () => {
  const before = { 405: deliveries(405), 410: deliveries(410), 200: deliveries(200) };
  const token = "0".repeat(32);
  expect(await answer("GET", `/agent/_vigil/mcp-events/${token}`)).toBe(405);
  expect(await answer("POST", `/agent/_vigil/mcp-events/${token}`)).toBe(410);
  expect(await answer("POST", "/agent/_vigil/mcp-events/not-a-token")).toBe(410);
  expect(await answer("GET", RECEIVER_DOCUMENT_PATH)).toBe(200);
  expect(deliveries(405) - before[405]).toBe(1);
  expect(deliveries(410) - before[410]).toBe(2);
  expect(deliveries(200) - before[200]).toBe(0);
});
