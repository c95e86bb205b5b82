import { describe, expect, test } from "bun:test";
import { DedupWindow } from "../../../src/events/rules/dedup.ts";
import { parseSubscriptionKey, subscriptionKey } from "../../../src/events/rules/key.ts";

describe("subscriptionKey", () => {
  test("argument key order (at any depth) does not change the key", () => {
    const a = subscriptionKey("tickets", "ticket.updated", { project: "alpha", filter: { b: 1, a: [2, { y: 1, x: 0 }] } });
    const b = subscriptionKey("tickets", "ticket.updated", { filter: { a: [2, { x: 0, y: 1 }], b: 1 }, project: "alpha" });
    expect(a).toBe(b);
    expect(a).toBe('tickets\0ticket.updated\0{"filter":{"a":[2,{"x":0,"y":1}],"b":1},"project":"alpha"}');
  });

  test("different servers, names or argument values are different keys", () => {
    const base = subscriptionKey("s", "n", { a: 1 });
    expect(subscriptionKey("t", "n", { a: 1 })).not.toBe(base);
    expect(subscriptionKey("s", "m", { a: 1 })).not.toBe(base);
    expect(subscriptionKey("s", "n", { a: "1" })).not.toBe(base);
    expect(subscriptionKey("s", "n", {})).not.toBe(base);
  });

  test("parseSubscriptionKey inverts it and refuses anything else", () => {
    const args = { z: "\0 nul inside", a: [1] };
    expect(parseSubscriptionKey(subscriptionKey("srv", "ev.name", args))).toEqual({ server: "srv", name: "ev.name", arguments: args });
    for (const bad of ["", "no separators", "a\0b", "a\0b\0not json", "a\0b\0[1]", "a\0b\0null"]) {
      expect(parseSubscriptionKey(bad)).toBeNull();
    }
  });
});

describe("DedupWindow", () => {
  test("remembers ids and evicts the oldest first at capacity", () => {
    const w = new DedupWindow([], 3);
    for (const id of ["a", "b", "c"]) w.add(id);
    expect(w.has("a")).toBe(true);
    w.add("d");
    expect(w.has("a")).toBe(false);
    expect(w.toArray()).toEqual(["b", "c", "d"]);
    w.add("c"); // known: no reordering, no eviction
    expect(w.toArray()).toEqual(["b", "c", "d"]);
    w.add("e");
    expect(w.toArray()).toEqual(["c", "d", "e"]);
    expect(w.has("b")).toBe(false);
  });

  test("restores from its persisted form, keeping only the newest `capacity`", () => {
    const w = new DedupWindow(["1", "2", "3", "4", "5"], 3);
    expect(w.toArray()).toEqual(["3", "4", "5"]);
    expect(w.has("2")).toBe(false);
    expect(new DedupWindow(w.toArray(), 3).toArray()).toEqual(["3", "4", "5"]);
  });

  test("defaults to 1024 ids", () => {
    const w = new DedupWindow();
    for (let i = 0; i < 1025; i++) w.add(`e${i}`);
    expect(w.size).toBe(1024);
    expect(w.has("e0")).toBe(false);
    expect(w.has("e1")).toBe(true);
    expect(w.has("e1024")).toBe(true);
  });

  test("as a ring (issue 16), it answers as the plain oldest-first list does, across many wrap-arounds and repeats", () => {
    let x = 7;
    const next = () => (x = (x * 1103515245 + 12345) % 2147483648);
    for (const capacity of [1, 2, 5, 16]) {
      const w = new DedupWindow([], capacity);
      const list: string[] = [];
      for (let i = 0; i < 500; i++) {
        const id = `e${next() % (capacity * 3)}`;
        w.add(id);
        if (!list.includes(id)) {
          list.push(id);
          if (list.length > capacity) list.shift();
        }
        expect(w.toArray()).toEqual(list);
        expect(w.size).toBe(list.length);
        for (let k = 0; k < capacity * 3; k++) expect(w.has(`e${k}`)).toBe(list.includes(`e${k}`));
      }
      expect(new DedupWindow(w.toArray(), capacity).toArray()).toEqual(list);
    }
  });
});
