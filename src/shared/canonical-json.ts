/**
 * RFC 8785 (JCS) canonical JSON for the digests vigil records: policy digests, tool-definition
 * pins, argument digests and command digests. Key order is UTF-16 code-unit order (JS string
 * comparison); numbers and strings use ECMAScript serialization, which is what the RFC specifies.
 */
export function canonicalJson(value: unknown): string {
  // Common case, and much faster: every object's keys are already in canonical order, so the
  // engine's own serializer produces exactly the canonical text.
  if (inCanonicalOrder(value, 0)) return JSON.stringify(value);
  return serialize(value);
}

/** True when JSON.stringify(value) is already canonical: keys sorted, only JSON-representable values. */
function inCanonicalOrder(value: unknown, depth: number): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || depth > 64) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (item === undefined || !inCanonicalOrder(item, depth + 1)) return false;
    return true;
  }
  let previous: string | null = null;
  for (const key in value as Record<string, unknown>) {
    if (previous !== null && !(previous < key)) return false;
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || !inCanonicalOrder(item, depth + 1)) return false;
    previous = key;
  }
  return Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null;
}

function serialize(value: unknown): string {
  if (value === null || typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("canonical JSON cannot represent a non-finite number");
    return JSON.stringify(value);
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => serialize(v === undefined ? null : v)).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`).join(",")}}`;
  }
  throw new TypeError(`canonical JSON cannot represent a ${typeof value}`);
}
