/** Limits and the format choice shared by the YAML and JSON policy readers. */

/** A policy file larger than this is refused before it is parsed. */
export const MAX_POLICY_BYTES = 1024 * 1024;

/** Containers nested deeper than this are refused (same bound for YAML and JSON). */
export const MAX_POLICY_DEPTH = 64;

export type PolicyFormat = "yaml" | "json";

export type SourceParse = { ok: true; value: unknown } | { ok: false; message: string };

/** The format a file's extension selects, or null for any other extension. */
export function policyFormatFor(path: string): PolicyFormat | null {
  const lower = path.toLowerCase();
  if (lower.endsWith(".yaml") || lower.endsWith(".yml")) return "yaml";
  if (lower.endsWith(".json")) return "json";
  return null;
}
