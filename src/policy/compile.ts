/**
 * A validated policy document turned into what evaluation needs: precompiled name patterns,
 * compiled argument validators and plain limits. Built once at load; immutable afterwards.
 */
import { createArgumentSchemaCompiler, type ArgumentValidator } from "./argument-schema.ts";
import { compilePattern, firstMatch, type ToolNamePattern } from "./pattern.ts";
import { formatDocumentPath } from "../shared/document-path.ts";
import type { PolicyDocument, UnconstrainedMode } from "./schema.ts";

export interface RateLimit {
  calls: number;
  perSeconds: number;
}

export interface CompiledPolicy {
  /** The validated document, defaults applied (unconstrained: allow, hide_denied: false). */
  readonly document: PolicyDocument;
  /** null: no allow list, so names are not restricted beyond the deny list. */
  readonly allow: readonly ToolNamePattern[] | null;
  readonly deny: readonly ToolNamePattern[];
  readonly hideDenied: boolean;
  /** Keyed by exact tool name. Maps, not objects, so a tool named "__proto__" cannot misbehave. */
  readonly argumentValidators: ReadonlyMap<string, ArgumentValidator>;
  readonly unconstrained: UnconstrainedMode;
  readonly maxToolCalls: number | null;
  readonly rate: RateLimit | null;
  /** Exact tool name → "sha256:<hex>" of its definition. */
  readonly pins: ReadonlyMap<string, string>;
}

export type PolicyCompile = { ok: true; policy: CompiledPolicy } | { ok: false; message: string };

export function compilePolicy(document: PolicyDocument): PolicyCompile {
  const validators = new Map<string, ArgumentValidator>();
  const entries = Object.entries(document.arguments);
  const compile = entries.length > 0 ? createArgumentSchemaCompiler() : null;
  for (const [tool, schema] of entries) {
    const compiled = compile!(schema);
    if (!compiled.ok) {
      return { ok: false, message: `${formatDocumentPath(["arguments", tool])}: invalid JSON Schema: ${compiled.message}` };
    }
    validators.set(tool, compiled.validate);
  }
  const { tools, limits } = document;
  return {
    ok: true,
    policy: {
      document,
      allow: tools.allow ? tools.allow.map(compilePattern) : null,
      deny: (tools.deny ?? []).map(compilePattern),
      hideDenied: tools.hide_denied,
      argumentValidators: validators,
      unconstrained: document.unconstrained,
      maxToolCalls: limits.max_tool_calls ?? null,
      rate: limits.rate ? { calls: limits.rate.calls, perSeconds: limits.rate.per_seconds } : null,
      pins: new Map(Object.entries(document.pins)),
    },
  };
}

/** What the name rules (deny list, then allow list) say about a tool name. */
export type NameRuling =
  | { kind: "denied"; index: number }
  | { kind: "not_allowed" }
  /** index: the matching allow-list entry, or null when there is no allow list. */
  | { kind: "allowed"; index: number | null };

export function nameRuling(policy: CompiledPolicy, name: string): NameRuling {
  const denied = firstMatch(policy.deny, name);
  if (denied >= 0) return { kind: "denied", index: denied };
  if (policy.allow === null) return { kind: "allowed", index: null };
  const allowed = firstMatch(policy.allow, name);
  return allowed >= 0 ? { kind: "allowed", index: allowed } : { kind: "not_allowed" };
}
