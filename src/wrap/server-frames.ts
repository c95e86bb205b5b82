/**
 * Classification of a server → client line without materializing it (wrap.md §2, §10).
 *
 * The proxy forwards server lines byte-for-byte; it only needs to know whether a line is one JSON
 * object (server stdout pollution must not reach the client), whether it is a response and to which
 * id. It reads the line as the client's JSON parser will: keys are decoded before they are compared
 * (`"\u0069d"` is `id`), so is the id's value, and a key that appears twice in one object, at any
 * depth, refuses the line — as a client line with one is refused (client-frames.ts), because a
 * first-wins and a last-wins parser would read it differently.
 *
 * A 10 MiB tool result is not JSON.parse'd for that: the walk keeps only a stack of the open
 * containers and their keys, and jumps over string contents with a native byte search. The line may
 * be held as pieces (a large line that spanned several reads); they are walked, not joined. Nested
 * values are checked for structure (brackets, commas, colons, closed strings), not for full scalar
 * grammar (the client's own parser is the authority on a well-framed message).
 */
import { END, FrameCursor, NotJson } from "./frame-cursor.ts";

export interface ServerFrameInfo {
  kind: "response" | "request" | "notification";
  /** For responses: whether it carries a result or an error. */
  outcome: "result" | "error" | null;
  /** Canonical key of the id (JSON.stringify of its decoded value), null when absent or not a valid id. */
  idKey: string | null;
  /**
   * Set when the line must not be forwarded although it is JSON: a duplicated key (kind and id are
   * then as a last-wins parser reads them), or nesting past SERVER_MAX_DEPTH.
   */
  refused?: "duplicate_key" | "too_deep";
}

/** Deeper server lines are refused: the walk's stack (and any client's parser) stays bounded. */
export const SERVER_MAX_DEPTH = 1024;

const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const BACKSLASH = 0x5c;

/** Returns the line's kind and id, or null when it is not a single JSON-RPC object. */
export function scanServerFrame(line: Uint8Array | readonly Uint8Array[]): ServerFrameInfo | null {
  try {
    return walk(new FrameCursor(line instanceof Uint8Array ? [line] : line));
  } catch (e) {
    if (e instanceof NotJson) return null;
    throw e;
  }
}

/** The keys of an open object: a short list, a Set once the object has many. */
interface ObjectKeys {
  list: string[];
  set: Set<string> | null;
}
const LIST_KEYS = 8;

/** What the walk expects next. */
const enum Expect {
  Value,
  ValueOrClose,
  Key,
  KeyOrClose,
  CommaOrClose,
}

/** The top-level `id` was an object or array: present, but no id a response can be matched by. */
const NOT_AN_ID = new Uint8Array(0);

function walk(c: FrameCursor): ServerFrameInfo {
  if (c.peekNonWs() !== LBRACE) throw new NotJson();
  /** Open containers: 1 for an object, 0 for an array (one byte a level, whatever the depth). */
  let kinds = new Uint8Array(64);
  let depth = 0;
  /** Key sets of the open containers up to SERVER_MAX_DEPTH (null for arrays). */
  const keySets: (ObjectKeys | null)[] = [];
  let refused: ServerFrameInfo["refused"];
  let topKey: string | null = null;
  let idRaw: Uint8Array | null = null;
  let hasMethod = false;
  let outcome: "result" | "error" | null = null;
  let expect = Expect.Value as Expect; // widened: the closures below change it

  const open = (object: boolean) => {
    c.advance();
    if (depth === kinds.length) {
      const grown = new Uint8Array(kinds.length * 2);
      grown.set(kinds);
      kinds = grown;
    }
    kinds[depth++] = object ? 1 : 0;
    if (depth <= SERVER_MAX_DEPTH) keySets.push(object ? { list: [], set: null } : null);
    else refused ??= "too_deep";
    expect = object ? Expect.KeyOrClose : Expect.ValueOrClose;
  };
  const close = () => {
    c.advance();
    if (depth-- <= SERVER_MAX_DEPTH) keySets.pop();
    expect = Expect.CommaOrClose;
  };

  for (;;) {
    const ch = c.peekNonWs();
    switch (expect) {
      case Expect.ValueOrClose:
      case Expect.Value: {
        if (expect === Expect.ValueOrClose && ch === RBRACKET) {
          close();
          break;
        }
        // Depth 1 is the outermost object: only its members say what the message is.
        const member = depth === 1 ? topKey : null;
        if (member === "method") hasMethod = true;
        else if (member === "result" || member === "error") outcome = member;
        if (ch === LBRACE || ch === LBRACKET) {
          if (member === "id") idRaw = NOT_AN_ID;
          open(ch === LBRACE);
          break;
        }
        const bytes = ch === QUOTE ? c.string(member === "id") : c.scalar(member === "id");
        if (member === "id") idRaw = bytes;
        expect = Expect.CommaOrClose;
        break;
      }
      case Expect.KeyOrClose:
      case Expect.Key: {
        if (expect === Expect.KeyOrClose && ch === RBRACE) {
          close();
          break;
        }
        if (ch !== QUOTE) throw new NotJson();
        const key = decodeKey(c.string(true)!);
        const keys = depth <= SERVER_MAX_DEPTH ? keySets[depth - 1] : null;
        if (keys && isDuplicate(keys, key)) refused ??= "duplicate_key";
        if (depth === 1) topKey = key;
        if (c.peekNonWs() !== COLON) throw new NotJson();
        c.advance();
        expect = Expect.Value;
        break;
      }
      case Expect.CommaOrClose: {
        if (depth === 0) {
          if (ch !== END) throw new NotJson(); // exactly one value on the line
          return frameInfo(hasMethod, outcome, normalizeId(idRaw), refused);
        }
        const object = kinds[depth - 1] === 1;
        if (ch === COMMA) {
          c.advance();
          expect = object ? Expect.Key : Expect.Value;
        } else if (ch === (object ? RBRACE : RBRACKET)) {
          close();
        } else throw new NotJson();
        break;
      }
    }
  }
}

function frameInfo(hasMethod: boolean, outcome: "result" | "error" | null, idKey: string | null, refused: ServerFrameInfo["refused"]): ServerFrameInfo {
  const extra = refused === undefined ? {} : { refused };
  if (hasMethod) return { kind: idKey === null ? "notification" : "request", outcome: null, idKey, ...extra };
  if (outcome === null) throw new NotJson(); // neither a request, a notification nor a response
  return { kind: "response", outcome, idKey, ...extra };
}

function isDuplicate(seen: ObjectKeys, key: string): boolean {
  if (seen.set !== null) {
    if (seen.set.has(key)) return true;
    seen.set.add(key);
    return false;
  }
  if (seen.list.includes(key)) return true;
  seen.list.push(key);
  if (seen.list.length > LIST_KEYS) seen.set = new Set(seen.list);
  return false;
}

const utf8 = new TextDecoder("utf-8");

/** A key string's bytes (quotes included) → the key as a JSON parser reads it. */
function decodeKey(raw: Uint8Array): string {
  // Most keys are short and ASCII: built directly, which is far cheaper than a decoder call.
  let ascii = "";
  for (let i = 1; i < raw.length - 1; i++) {
    const b = raw[i]!;
    if (b === BACKSLASH || b < 0x20) return parseToken(raw) as string;
    if (b >= 0x80 || i > 64) return utf8.decode(raw.subarray(1, raw.length - 1));
    ascii += String.fromCharCode(b);
  }
  return ascii;
}

function normalizeId(raw: Uint8Array | null): string | null {
  if (raw === null || raw === NOT_AN_ID) return null;
  const v = parseToken(raw);
  if (typeof v === "string") return JSON.stringify(v);
  return typeof v === "number" && Number.isFinite(v) ? JSON.stringify(v) : null;
}

/** One JSON token (a string with its quotes, or a scalar), decoded; not JSON → NotJson. */
function parseToken(raw: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(raw));
  } catch {
    throw new NotJson();
  }
}
