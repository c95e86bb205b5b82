import { describe, expect, test } from "bun:test";
import { chooseDeliveryMode, offeredModes } from "../../../src/events/rules/negotiate.ts";

const ALL = { webhook: true, push: true } as const;
const STDIO = { missing: "serve --listen and --mcp-events-callback-url" };
const NO_CALLBACK = { missing: "--mcp-events-callback-url" };
const NO_WEBHOOK = { webhook: STDIO, push: true };

describe("chooseDeliveryMode", () => {
  test("prefers webhook, then push, then poll, among modes offered and usable", () => {
    expect(chooseDeliveryMode(["poll", "push", "webhook"], undefined, ALL)).toEqual({ mode: "webhook" });
    expect(chooseDeliveryMode(["poll", "push", "webhook"], undefined, NO_WEBHOOK)).toEqual({ mode: "push" });
    expect(chooseDeliveryMode(["poll", "webhook"], undefined, NO_WEBHOOK)).toEqual({ mode: "poll" });
    expect(chooseDeliveryMode(["push", "poll"], undefined, { webhook: true, push: false })).toEqual({ mode: "poll" });
    expect(chooseDeliveryMode(["poll"], undefined, ALL)).toEqual({ mode: "poll" });
  });

  test("unknown strings and garbage entries are ignored", () => {
    expect(chooseDeliveryMode(["carrier-pigeon", 7, null, "push"], undefined, ALL)).toEqual({ mode: "push" });
    expect(offeredModes(["push", "push", "poll", "sse"])).toEqual(["push", "poll"]);
    expect(offeredModes("poll")).toEqual([]);
  });

  test("a forced mode must be offered; the error says what is", () => {
    expect(chooseDeliveryMode(["poll"], "push", ALL)).toEqual({
      error: "the server does not offer push delivery for this event (it offers: poll)",
    });
    expect(chooseDeliveryMode(["webhook", "poll"], "poll", ALL)).toEqual({ mode: "poll" });
    expect(chooseDeliveryMode(["webhook", "push", "poll"], "push", ALL)).toEqual({ mode: "push" });
    expect(chooseDeliveryMode([], "poll", ALL)).toEqual({ error: "the server does not offer poll delivery for this event (it offers: none)" });
  });

  test("forced webhook without the flags names exactly the missing ones, and only then", () => {
    expect(chooseDeliveryMode(["webhook", "poll"], "webhook", NO_WEBHOOK)).toEqual({
      error: "webhook delivery needs serve --listen and --mcp-events-callback-url",
    });
    expect(chooseDeliveryMode(["webhook", "poll"], "webhook", { webhook: NO_CALLBACK, push: true })).toEqual({
      error: "webhook delivery needs --mcp-events-callback-url",
    });
    // Both flags given: webhook is used, never refused with the old text.
    expect(chooseDeliveryMode(["webhook"], "webhook", ALL)).toEqual({ mode: "webhook" });
    expect(chooseDeliveryMode(["webhook", "push", "poll"], "webhook", { webhook: true, push: false })).toEqual({ mode: "webhook" });
  });

  test("nothing fits: one error listing the offer, with the webhook hint when it would help", () => {
    expect(chooseDeliveryMode(["webhook"], undefined, { webhook: NO_CALLBACK, push: true })).toEqual({
      error: "no compatible delivery mode (the server offers: webhook; webhook needs --mcp-events-callback-url)",
    });
    expect(chooseDeliveryMode(["webhook"], undefined, NO_WEBHOOK)).toEqual({
      error: "no compatible delivery mode (the server offers: webhook; webhook needs serve --listen and --mcp-events-callback-url)",
    });
    expect(chooseDeliveryMode(["push"], undefined, { webhook: true, push: false })).toEqual({
      error: "no compatible delivery mode (the server offers: push)",
    });
    expect(chooseDeliveryMode(undefined, undefined, ALL)).toEqual({ error: "no compatible delivery mode (the server offers: none)" });
  });
});
