/**
 * Tool definitions as seen in tools/list results: their digests (for pins, wrap.md §4.1) and the
 * filtering of denied tools (`tools.hide_denied`).
 */
import { canonicalSha256 } from "../shared/digest.ts";
import { isRecord } from "../shared/guards.ts";
import { nameRuling, type CompiledPolicy } from "./compile.ts";
import { DEFINITION_CONFLICT, type PolicySession } from "./session.ts";

/** The fields of a tool definition that a pin covers. */
const PINNED_FIELDS = ["name", "description", "inputSchema"] as const;


/**
 * "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of {name, description, inputSchema},
 * with only the keys that are present. Independent of key order; other fields (annotations,
 * title, _meta…) do not affect it.
 */
export function toolDefinitionDigest(tool: Readonly<Record<string, unknown>>): string {
  const projected: Record<string, unknown> = {};
  for (const field of PINNED_FIELDS) {
    if (Object.hasOwn(tool, field) && tool[field] !== undefined) projected[field] = tool[field];
  }
  return `sha256:${canonicalSha256(projected)}`;
}

/**
 * The session after one tools/list result (one page): each listed tool's digest replaces the one
 * seen before. Entries without a string name are ignored. Pages merge, since a paginated listing
 * arrives as several results; a name listed twice with different definitions in one result is
 * recorded as a conflict, which no pin matches.
 */
export function observeToolsList(session: PolicySession, tools: readonly unknown[]): PolicySession {
  const definitions = new Map(session.definitions);
  const thisList = new Map<string, string>();
  for (const tool of tools) {
    if (!isRecord(tool) || typeof tool.name !== "string") continue;
    const digest = toolDefinitionDigest(tool);
    const earlier = thisList.get(tool.name);
    const recorded = earlier !== undefined && earlier !== digest ? DEFINITION_CONFLICT : digest;
    thisList.set(tool.name, recorded);
    definitions.set(tool.name, recorded);
  }
  return { ...session, definitions };
}

/**
 * The tools a client gets to see. With `tools.hide_denied`, tools the name rules deny (deny list,
 * or not on the allow list) are dropped; entries without a string name are left as they are.
 * Without it, the same array is returned.
 */
export function visibleTools<T>(policy: CompiledPolicy, tools: readonly T[]): readonly T[] {
  if (!policy.hideDenied) return tools;
  return tools.filter((tool) => {
    if (!isRecord(tool) || typeof tool.name !== "string") return true;
    return nameRuling(policy, tool.name).kind === "allowed";
  });
}
