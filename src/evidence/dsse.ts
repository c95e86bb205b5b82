/**
 * DSSE envelopes (https://github.com/secure-systems-lab/dsse, protocol v1) signed with Ed25519.
 *
 * The signature covers the Pre-Authentication Encoding of the payload, never the payload alone:
 *
 *   PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
 *
 * with LEN the ASCII decimal byte length. Envelopes are `{"payload","payloadType","signatures":
 * [{"keyid","sig"}]}`, payload and sig in standard base64. Pure: bytes and keys in, results out.
 */
import { type KeyObject, sign, verify } from "node:crypto";

export const IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json";
/** The payload type of a checkpoint line (checkpoints.ndjson). */
export const CHECKPOINT_PAYLOAD_TYPE = "application/vnd.vigil.checkpoint.v1+json";

export interface DsseSignature {
  keyid: string;
  sig: string;
}

export interface DsseEnvelope {
  payload: string;
  payloadType: string;
  signatures: DsseSignature[];
}

/** What signs: the key id (hex SHA-256 of the public key's SPKI DER) and Ed25519 over bytes. */
export interface Signer {
  readonly keyid: string;
  sign(data: Uint8Array): Uint8Array;
}

/** A public key a verifier trusts, with where it came from (for reports). */
export interface TrustedKey {
  readonly keyid: string;
  readonly key: KeyObject;
  readonly file: string;
}

export function pae(payloadType: string, body: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, "utf8");
  const head = Buffer.from(`DSSEv1 ${type.length} ${payloadType} ${body.length} `, "utf8");
  return Buffer.concat([head, body]);
}

export function ed25519Signer(keyid: string, privateKey: KeyObject): Signer {
  return { keyid, sign: (data) => sign(null, data, privateKey) };
}

export function signEnvelope(payloadType: string, payload: Uint8Array, signer: Signer): DsseEnvelope {
  const sig = signer.sign(pae(payloadType, payload));
  return {
    payload: Buffer.from(payload).toString("base64"),
    payloadType,
    signatures: [{ keyid: signer.keyid, sig: Buffer.from(sig).toString("base64") }],
  };
}

export type EnvelopeCheck =
  | { ok: true; keyid: string; payload: Buffer }
  | { ok: false; code: "envelope_invalid" | "signature_invalid" | "key_untrusted"; message: string };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** An envelope carries at most this many signatures (a bound on hostile input). */
export const MAX_SIGNATURES = 8;

/**
 * Checks an envelope (already parsed strictly) against trusted keys: the payload type must be
 * `payloadType`, and one signature must verify under the trusted key its `keyid` names.
 *
 * - no signature names a trusted key → `key_untrusted`;
 * - a signature names a trusted key but does not verify under it → `signature_invalid`.
 */
export function verifyEnvelope(envelope: unknown, trusted: readonly TrustedKey[], payloadType: string): EnvelopeCheck {
  const shape = envelopeProblem(envelope);
  if (shape !== null) return { ok: false, code: "envelope_invalid", message: shape };
  const env = envelope as DsseEnvelope;
  if (env.payloadType !== payloadType) return { ok: false, code: "envelope_invalid", message: `payloadType ${JSON.stringify(env.payloadType)}, expected ${payloadType}` };
  const payload = Buffer.from(env.payload, "base64");
  const message = pae(env.payloadType, payload);
  let named = false;
  for (const s of env.signatures) {
    const key = trusted.find((k) => k.keyid === s.keyid);
    if (key === undefined) continue;
    named = true;
    const sig = Buffer.from(s.sig, "base64");
    if (sig.length === 64 && verify(null, message, key.key, sig)) return { ok: true, keyid: key.keyid, payload };
  }
  if (!named) {
    // Shortened (the operator compares them with keygen's output), with the keys given: which key to look for.
    const short = (id: string) => (id.length > 16 ? `${id.slice(0, 16)}…` : id);
    const ids = env.signatures.map((s) => short(s.keyid)).join(", ");
    const given = trusted.map((k) => short(k.keyid)).join(", ");
    return { ok: false, code: "key_untrusted", message: `signed by key ${ids || "(none)"}, which is not trusted (trusted: ${given || "none"})` };
  }
  return { ok: false, code: "signature_invalid", message: "the signature does not verify under the trusted key it names" };
}

/** Null when `x` has the envelope's shape (strictly: no other members), else what is wrong. */
export function envelopeProblem(x: unknown): string | null {
  if (typeof x !== "object" || x === null || Array.isArray(x)) return "not a DSSE envelope (expected an object)";
  const e = x as Record<string, unknown>;
  for (const k of Object.keys(e)) if (k !== "payload" && k !== "payloadType" && k !== "signatures") return `unexpected member ${JSON.stringify(k)}`;
  if (typeof e.payload !== "string" || !BASE64.test(e.payload)) return "payload is not base64";
  if (typeof e.payloadType !== "string") return "payloadType is not a string";
  if (!Array.isArray(e.signatures) || e.signatures.length === 0) return "no signatures";
  if (e.signatures.length > MAX_SIGNATURES) return `more than ${MAX_SIGNATURES} signatures`;
  for (const s of e.signatures) {
    if (typeof s !== "object" || s === null || Array.isArray(s)) return "a signature is not an object";
    const sig = s as Record<string, unknown>;
    for (const k of Object.keys(sig)) if (k !== "keyid" && k !== "sig") return `unexpected signature member ${JSON.stringify(k)}`;
    if (typeof sig.keyid !== "string" || sig.keyid.length > 256) return "a signature's keyid is not a string";
    if (typeof sig.sig !== "string" || !BASE64.test(sig.sig) || sig.sig.length > 1024) return "a signature's sig is not base64";
  }
  return null;
}
