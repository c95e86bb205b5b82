/**
 * The one reader of an over-cap JSON-RPC message's head (and tail): what the first few KiB say
 * about it, read structurally — the id, the method, the routing facts of an event.
 *
 * The head is a prefix: it usually ends inside some value. The scanner walks the top-level members
 * (and, inside `params`, the few scalars a stand-in needs), skipping every other value without
 * building it, and stops cleanly wherever the head ends. Only values that were complete inside the
 * head are reported; a value cut off by the end of the head is unknown, never guessed. Member order
 * is free in JSON and servers differ, so nothing assumes one.
 */

export const SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId";

export type JsonRpcId = string | number;

/** How much of a message's start is read for its id; longer ids are not recovered. */
export const ID_HEAD_BYTES = 4096;
const MAX_ID_CHARS = 256;

export interface HeadFacts {
  /** The head is not the start of a JSON object (garbage, an array, a scalar, empty). */
  notObject: boolean;
  /** The whole top-level object ended inside the head. */
  complete: boolean;
  /** The top-level `method`, when its string value was complete. */
  method?: string;
  /** A top-level `id` member was seen (requests and responses have one; notifications never). */
  sawId: boolean;
  /** The top-level `id`, when it was a complete string (≤ 256 characters) or finite number. */
  id?: JsonRpcId;
  /** A top-level `result` or `error` member came before any `method`. */
  responseFirst: boolean;
  params: {
    eventId?: string;
    name?: string;
    cursor?: string | null;
    subscriptionId?: string | number;
  };
}

/** The head is over: report what was learnt so far. */
const STOP = Symbol("stop");
type Stop = typeof STOP;

export function scanHead(text: string): HeadFacts {
  const facts: HeadFacts = { notObject: false, complete: false, sawId: false, responseFirst: false, params: {} };
  const s = new Scanner(text);
  s.ws();
  if (s.peek() !== "{") {
    facts.notObject = true;
    return facts;
  }
  s.pos++;
  const done = s.members((key) => {
    switch (key) {
      case "method": {
        const value = s.value();
        if (value === STOP) return STOP;
        if (typeof value === "string") facts.method = value;
        return undefined;
      }
      case "id": {
        facts.sawId = true;
        const value = s.value();
        if (value === STOP) return STOP;
        const id = validId(value);
        if (id === null) delete facts.id; // a later duplicate wins, as with JSON.parse
        else facts.id = id;
        return undefined;
      }
      case "result":
      case "error":
        if (facts.method === undefined) {
          facts.responseFirst = true;
          return STOP; // decided: nothing after this can make it a notification
        }
        return s.skip();
      case "params":
        return s.peek() === "{" ? scanParams(s, facts.params) : s.skip();
      default:
        return s.skip();
    }
  });
  facts.complete = done;
  return facts;
}

const headDecoder = new TextDecoder("utf-8", { fatal: false });

/**
 * The id of an over-cap message from its bounded head: the top-level `id` member as a JSON parser
 * would read it (keys and values decoded, members in any order), provided every member before it
 * was complete inside the head. An "id" nested in params or result never counts.
 */
export function recoverIdFromHead(head: Uint8Array): JsonRpcId | null {
  return scanHead(headDecoder.decode(head.subarray(0, ID_HEAD_BYTES))).id ?? null;
}

/**
 * What the bounded ends of an over-cap message say about it: its id (the tail's first, as a
 * last-wins parser reads a duplicate) and whether its head shows a top-level `method` (then it is
 * a request or notification, which never answers a pending request).
 */
export function overCapFacts(head: Uint8Array, tail: Uint8Array): { id: JsonRpcId | null; hasMethod: boolean } {
  const facts = scanHead(headDecoder.decode(head.subarray(0, ID_HEAD_BYTES)));
  return { id: recoverIdFromTail(tail) ?? facts.id ?? null, hasMethod: facts.method !== undefined };
}

/**
 * The id from a message's tail, only as the last member of the top-level object
 * (`…,"id":7}`): an object cannot be read backwards, so a nested "id" is refused by requiring the
 * object's final `}` right after it. The key is decoded before it is compared, as the client's
 * parser reads it (`…,"\u0069d":7}` is an id too), and so is the value.
 */
const TRAILING_MEMBER =
  /[,{]\s*("(?:[^"\\\n]|\\.){1,64}")\s*:\s*("(?:[^"\\\n]|\\.){0,1536}"|-?(?:0|[1-9]\d{0,19})(?:\.\d{1,20})?(?:[eE][+-]?\d{1,3})?)\s*}\s*$/;

export function recoverIdFromTail(tail: Uint8Array): JsonRpcId | null {
  const member = TRAILING_MEMBER.exec(headDecoder.decode(tail));
  if (member === null) return null;
  try {
    return JSON.parse(member[1]!) === "id" ? validId(JSON.parse(member[2]!)) : null;
  } catch {
    return null; // a bad escape: not JSON
  }
}

function validId(value: unknown): JsonRpcId | null {
  if (typeof value === "string") return value.length <= MAX_ID_CHARS ? value : null;
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function scanParams(s: Scanner, params: HeadFacts["params"]): Stop | undefined {
  s.pos++;
  const done = s.members((key) => {
    if (key === "eventId" || key === "name") {
      const value = s.value();
      if (value === STOP) return STOP;
      if (typeof value === "string") params[key] = value;
      return undefined;
    }
    if (key === "cursor") {
      const value = s.value();
      if (value === STOP) return STOP;
      if (typeof value === "string" || value === null) params.cursor = value;
      return undefined;
    }
    if (key === "_meta" && s.peek() === "{") {
      s.pos++;
      const metaDone = s.members((metaKey) => {
        if (metaKey !== SUBSCRIPTION_ID_META) return s.skip();
        const value = s.value();
        if (value === STOP) return STOP;
        if (typeof value === "string" || (typeof value === "number" && Number.isFinite(value))) params.subscriptionId = value;
        return undefined;
      });
      return metaDone ? undefined : STOP;
    }
    return s.skip();
  });
  return done ? undefined : STOP;
}

const WS = new Set([" ", "\t", "\n", "\r", "\ufeff"]);
const DELIMITERS = new Set([",", "}", "]", ":", " ", "\t", "\n", "\r"]);

/** A cursor over the head text. Every method either completes or returns STOP; none throws. */
class Scanner {
  pos = 0;
  constructor(private readonly text: string) {}

  peek(): string | undefined {
    return this.text[this.pos];
  }

  ws(): void {
    while (this.pos < this.text.length && WS.has(this.text[this.pos]!)) this.pos++;
  }

  /**
   * Walks an object's members (the `{` already consumed): `onMember` is called with the cursor on
   * each value and must consume it. True when the closing `}` was reached, false when stopped.
   */
  members(onMember: (key: string) => Stop | undefined): boolean {
    for (;;) {
      this.ws();
      const c = this.peek();
      if (c === undefined) return false;
      if (c === "}") {
        this.pos++;
        return true;
      }
      if (c === ",") {
        this.pos++;
        continue;
      }
      if (c !== '"') return false; // not JSON: nothing more can be trusted
      const key = this.string();
      if (key === STOP) return false;
      this.ws();
      if (this.peek() !== ":") return false;
      this.pos++;
      this.ws();
      if (onMember(key) === STOP) return false;
    }
  }

  /** A string or scalar value, parsed; objects and arrays are skipped (reported as undefined). */
  value(): unknown | Stop {
    const c = this.peek();
    if (c === undefined) return STOP;
    if (c === '"') return this.string();
    if (c === "{" || c === "[") return this.skip();
    return this.scalar();
  }

  string(): string | Stop {
    const start = this.pos;
    let i = start + 1;
    while (i < this.text.length) {
      const c = this.text[i];
      if (c === "\\") i += 2;
      else if (c === '"') break;
      else i++;
    }
    if (i >= this.text.length) return STOP; // cut off by the end of the head
    this.pos = i + 1;
    try {
      return JSON.parse(this.text.slice(start, i + 1)) as string;
    } catch {
      return STOP; // a bad escape or a raw control character: not JSON
    }
  }

  /** A number or literal: complete only when a delimiter follows it inside the head. */
  scalar(): unknown | Stop {
    const start = this.pos;
    let i = start;
    while (i < this.text.length && !DELIMITERS.has(this.text[i]!)) i++;
    if (i >= this.text.length || i === start) return STOP;
    this.pos = i;
    try {
      return JSON.parse(this.text.slice(start, i));
    } catch {
      return STOP;
    }
  }

  /** Skips one value of any kind. Nesting is counted, not recursed, so depth costs nothing. */
  skip(): Stop | undefined {
    const c = this.peek();
    if (c !== "{" && c !== "[") return this.value() === STOP ? STOP : undefined;
    let depth = 0;
    while (this.pos < this.text.length) {
      const ch = this.text[this.pos]!;
      if (ch === '"') {
        if (this.string() === STOP) return STOP;
        continue;
      }
      this.pos++;
      if (ch === "{" || ch === "[") depth++;
      else if (ch === "}" || ch === "]") {
        depth--;
        if (depth === 0) return undefined;
      }
    }
    return STOP;
  }
}
