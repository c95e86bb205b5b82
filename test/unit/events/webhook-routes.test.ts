import { describe, expect, test } from "bun:test";
import { WebhookRouteTable, WebhookRoutesFull } from "../../../src/events/webhook/routes.ts";
import type { WebhookRoute } from "../../../src/events/webhook/types.ts";

const T1 = "0".repeat(31) + "1";
const T2 = "0".repeat(31) + "2";

function route(token: string): WebhookRoute {
  return { token, secrets: () => [], subscriptionId: null, origin: null, stage: "active", deliver: async () => ({ status: 200 }) };
}

function table(o: { windowMs?: number; max?: number } = {}) {
  const clock = { t: 1_000_000 };
  const routes = new WebhookRouteTable({ now: () => clock.t, restoreWindowMs: o.windowMs ?? 600_000, ...(o.max !== undefined ? { maxEntries: o.max } : {}) });
  return { routes, clock };
}

describe("WebhookRouteTable", () => {
  test("a registered route is found; an unknown token is gone", () => {
    const { routes } = table();
    const r = route(T1);
    routes.register(r);
    expect(routes.lookup(T1)).toEqual({ kind: "route", route: r });
    expect(routes.lookup(T2)).toEqual({ kind: "gone" });
  });

  test("a reservation holds until its route registers, which replaces it", () => {
    const { routes } = table();
    routes.reserve(T1);
    expect(routes.lookup(T1)).toEqual({ kind: "held", reason: "reserved" });
    expect(routes.inUse(T1)).toBe(true);
    const r = route(T1);
    routes.register(r);
    expect(routes.lookup(T1)).toEqual({ kind: "route", route: r });
    expect(routes.size).toEqual({ routes: 1, reserved: 0 });
  });

  test("a released reservation is gone at once", () => {
    const { routes } = table();
    routes.reserve(T1);
    routes.release(T1);
    expect(routes.lookup(T1)).toEqual({ kind: "gone" });
    expect(routes.inUse(T1)).toBe(false);
  });

  test("a reservation holds only within the restore window since construction", () => {
    const { routes, clock } = table({ windowMs: 600_000 });
    clock.t += 599_999;
    routes.reserve(T1);
    expect(routes.lookup(T1)).toEqual({ kind: "held", reason: "reserved" });
    clock.t += 1;
    expect(routes.lookup(T1)).toEqual({ kind: "gone" });
    expect(routes.inUse(T1)).toBe(false);
  });

  test("while restoring every unknown token is held, until endRestoring or the window ends", () => {
    const { routes, clock } = table({ windowMs: 10_000 });
    expect(routes.lookup(T2)).toEqual({ kind: "gone" });
    routes.beginRestoring();
    expect(routes.lookup(T2)).toEqual({ kind: "held", reason: "restoring" });
    routes.endRestoring();
    expect(routes.lookup(T2)).toEqual({ kind: "gone" });
    routes.beginRestoring();
    clock.t += 10_000;
    expect(routes.lookup(T2)).toEqual({ kind: "gone" });
  });

  test("a reservation answers reserved, not restoring, while both apply", () => {
    const { routes } = table();
    routes.beginRestoring();
    routes.reserve(T1);
    expect(routes.lookup(T1)).toEqual({ kind: "held", reason: "reserved" });
  });

  test("unregister removes only the route object still registered under its token", () => {
    const { routes } = table();
    const old = route(T1);
    const replacement = route(T1);
    routes.register(old);
    routes.register(replacement);
    routes.unregister(old);
    expect(routes.lookup(T1)).toEqual({ kind: "route", route: replacement });
    routes.unregister(replacement);
    expect(routes.lookup(T1)).toEqual({ kind: "gone" });
    expect(routes.inUse(T1)).toBe(false);
  });

  test("routes and reservations together are bounded; past the bound a new one is refused with a typed error", () => {
    const { routes } = table({ max: 2 });
    routes.register(route(T1));
    routes.reserve(T2);
    const third = "0".repeat(31) + "3";
    expect(() => routes.reserve(third)).toThrow(WebhookRoutesFull);
    expect(() => routes.register(route(third))).toThrow(WebhookRoutesFull);
    // Replacing a route or filling a reservation takes no extra room.
    routes.register(route(T1));
    routes.register(route(T2));
    expect(routes.size).toEqual({ routes: 2, reserved: 0 });
    let refusal: unknown = null;
    try {
      routes.reserve(third);
    } catch (e) {
      refusal = e;
    }
    expect((refusal as WebhookRoutesFull).code).toBe("webhook_routes_full");
  });

  test("refusals and successes are counted; the counters are a copy", () => {
    const { routes } = table();
    routes.refused("signature");
    routes.refused("signature");
    routes.succeeded("accepted");
    const seen = routes.counters;
    expect(seen.signature).toBe(2);
    expect(seen.accepted).toBe(1);
    expect(seen.unknown_token).toBe(0);
    routes.refused("signature");
    expect(seen.signature).toBe(2);
  });
});
