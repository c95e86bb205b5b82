import { describe, expect, test } from "bun:test";
import { eventsCapability } from "../../../src/events/rules/capability.ts";

const init = (capabilities: unknown) => ({ protocolVersion: "2025-11-25", capabilities, serverInfo: { name: "s", version: "1" } });

describe("eventsCapability", () => {
  test("the sketch's top-level `events` object", () => {
    expect(eventsCapability(init({ events: {} }))).toEqual({ supported: true, listChanged: false });
    expect(eventsCapability(init({ events: { listChanged: true } }))).toEqual({ supported: true, listChanged: true });
  });

  test("SEP-3415's extensions entry", () => {
    expect(eventsCapability(init({ extensions: { "io.modelcontextprotocol/events": {} } }))).toEqual({ supported: true, listChanged: false });
    expect(eventsCapability(init({ extensions: { "io.modelcontextprotocol/events": { listChanged: true } } }))).toEqual({
      supported: true,
      listChanged: true,
    });
  });

  test("both locations: supported, and listChanged if either copy says so", () => {
    expect(eventsCapability(init({ events: {}, extensions: { "io.modelcontextprotocol/events": {} } }))).toEqual({
      supported: true,
      listChanged: false,
    });
    expect(eventsCapability(init({ events: { listChanged: true }, extensions: { "io.modelcontextprotocol/events": {} } })).listChanged).toBe(true);
    expect(eventsCapability(init({ events: {}, extensions: { "io.modelcontextprotocol/events": { listChanged: true } } })).listChanged).toBe(true);
  });

  test("neither location: unsupported", () => {
    expect(eventsCapability(init({ tools: {} }))).toEqual({ supported: false, listChanged: false });
    expect(eventsCapability(init({ extensions: { "io.modelcontextprotocol/other": {} } }))).toEqual({ supported: false, listChanged: false });
  });

  test("garbage never counts as support and never throws", () => {
    for (const raw of [undefined, null, 42, "events", [], { capabilities: null }, { capabilities: [] }, { capabilities: "x" }]) {
      expect(eventsCapability(raw)).toEqual({ supported: false, listChanged: false });
    }
    for (const events of [true, 1, "yes", null, []]) {
      expect(eventsCapability(init({ events })).supported).toBe(false);
      expect(eventsCapability(init({ extensions: { "io.modelcontextprotocol/events": events } })).supported).toBe(false);
    }
    expect(eventsCapability(init({ extensions: [] })).supported).toBe(false);
    // listChanged must be literally true.
    expect(eventsCapability(init({ events: { listChanged: "true" } })).listChanged).toBe(false);
    // An inherited property is not an advertisement.
    expect(eventsCapability(init(Object.create({ events: {} }))).supported).toBe(false);
  });
});
