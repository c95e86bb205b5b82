/** Type guards every part uses on decoded JSON; one definition so they cannot drift apart. */

/** A JSON object as a parser hands it over: not null, not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
