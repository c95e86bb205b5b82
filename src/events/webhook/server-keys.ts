/**
 * The v1a keys known per MCP server origin (events design notes §4.6; wire notes §12.3): one store
 * per process, seeded from every session's snapshot (`server_keys`) and fed by each JWKS fetch.
 *
 * Fail closed means the set only grows: once a key was seen for an origin, every delivery from a
 * subscription on that origin must carry a valid `v1a,` — a server that later answers 404, an empty
 * document or nothing at all is still held to the keys it published. So `add` never removes, and
 * there is no remove.
 *
 * Bounded, because JWKS documents come from servers: past `keysPerOrigin` keys for one origin or
 * `origins` origins, new ones are ignored (the known ones keep being enforced) and that is logged
 * once per process.
 */
import { logLine } from "../../shared/log.ts";
import type { ServerKeys } from "./types.ts";

export const SERVER_KEY_BOUNDS = {
  /** Keys remembered per origin; a rotation publishes the new key beside the old, so a few suffice. */
  keysPerOrigin: 64,
  /** Origins remembered per process (one per configured or runtime HTTP server). */
  origins: 1024,
  /** Longest origin string accepted (scheme, host and port only). */
  originChars: 2048,
} as const;

/** An Ed25519 public key is 32 bytes: 43 base64url characters, no padding (RFC 8037). */
const ED25519_X = /^[A-Za-z0-9_-]{43}$/;
const PUBLIC_KEY_BYTES = 32;

/**
 * The raw key of a base64url `x`, or null. Strict: unpadded, exactly 32 bytes, and canonical (the
 * unused low bits of the last character are zero), so one key has exactly one spelling and the
 * "only grows" set cannot be padded with aliases of a key it already holds.
 */
export function decodeEd25519X(x: string): Uint8Array | null {
  if (!ED25519_X.test(x)) return null;
  const bytes = Buffer.from(x, "base64url");
  if (bytes.length !== PUBLIC_KEY_BYTES || bytes.toString("base64url") !== x) return null;
  return new Uint8Array(bytes);
}

/** True for an origin as `URL.origin` spells it (`https://host:port`, no path, no user info). */
export function isOrigin(origin: string): boolean {
  if (origin.length === 0 || origin.length > SERVER_KEY_BOUNDS.originChars || !URL.canParse(origin)) return false;
  const url = new URL(origin);
  return (url.protocol === "http:" || url.protocol === "https:") && url.origin === origin;
}

interface OriginKeys {
  /** Copy-on-write: a caller holding the array of an earlier `keys()` never sees it change. */
  keys: readonly Uint8Array[];
  xs: readonly string[];
}

const NONE: readonly Uint8Array[] = Object.freeze([]);

export interface ServerKeyStoreOptions {
  bounds?: { keysPerOrigin: number; origins: number };
  /** Where the one "bound reached" line goes (default: the stderr log). */
  log?: (line: string) => void;
}

export class ServerKeyStore implements ServerKeys {
  readonly #byOrigin = new Map<string, OriginKeys>();
  readonly #bounds: { keysPerOrigin: number; origins: number };
  readonly #log: (line: string) => void;
  #warned = { keys: false, origins: false };

  constructor(options: ServerKeyStoreOptions = {}) {
    this.#bounds = options.bounds ?? SERVER_KEY_BOUNDS;
    this.#log = options.log ?? logLine;
  }

  keys(origin: string): readonly Uint8Array[] {
    return this.#byOrigin.get(origin)?.keys ?? NONE;
  }

  add(origin: string, xs: readonly string[]): boolean {
    if (!isOrigin(origin)) return false;
    const known = this.#byOrigin.get(origin);
    const fresh = freshKeys(known?.xs ?? [], xs);
    if (fresh.length === 0) return false;
    if (known === undefined && this.#byOrigin.size >= this.#bounds.origins) {
      this.#warnOnce("origins", `events: webhook-signing keys are remembered for at most ${this.#bounds.origins} servers; the keys of further servers are ignored`);
      return false;
    }
    const room = this.#bounds.keysPerOrigin - (known?.xs.length ?? 0);
    if (fresh.length > room) {
      this.#warnOnce("keys", `events: at most ${this.#bounds.keysPerOrigin} webhook-signing keys are remembered per server; further keys are ignored`);
    }
    const taken = fresh.slice(0, Math.max(0, room));
    if (taken.length === 0) return false;
    this.#byOrigin.set(origin, {
      xs: Object.freeze([...(known?.xs ?? []), ...taken.map((k) => k.x)]),
      keys: Object.freeze([...(known?.keys ?? []), ...taken.map((k) => k.key)]),
    });
    return true;
  }

  exported(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const [origin, known] of this.#byOrigin) out[origin] = [...known.xs];
    return out;
  }

  #warnOnce(which: "keys" | "origins", line: string): void {
    if (this.#warned[which]) return;
    this.#warned = { ...this.#warned, [which]: true };
    this.#log(line);
  }
}

/** The valid keys of `xs` not yet in `known`, each once, in the order given. */
function freshKeys(known: readonly string[], xs: readonly string[]): { x: string; key: Uint8Array }[] {
  const seen = new Set(known);
  const fresh: { x: string; key: Uint8Array }[] = [];
  for (const x of xs) {
    if (typeof x !== "string" || seen.has(x)) continue;
    const key = decodeEd25519X(x);
    if (key === null) continue;
    seen.add(x);
    fresh.push({ x, key });
  }
  return fresh;
}
