/** `vigil policy check FILE`: validate a policy and summarize it. The command prints the summary. */
import { loadPolicyFile } from "./load.ts";
import type { UnconstrainedMode } from "./schema.ts";

export interface PolicySummary {
  path: string;
  digest: string;
  file_sha256: string;
  /** allow: number of allow patterns, or null when there is no allow list (names unrestricted). */
  tools: { allow: number | null; deny: number; hide_denied: boolean };
  /** Tools with an argument schema. */
  arguments: string[];
  /** The effective rule (default "allow" when the file does not say). */
  unconstrained: UnconstrainedMode;
  limits: { max_tool_calls: number | null; rate: { calls: number; per_seconds: number } | null };
  /** Pinned tool names. */
  pins: string[];
}

/** Loads the policy (throwing VigilError("policy_invalid") on any problem) and summarizes it. */
export async function checkPolicy(path: string): Promise<PolicySummary> {
  const loaded = await loadPolicyFile(path);
  const { document } = loaded.policy;
  return {
    path: loaded.path,
    digest: loaded.digest,
    file_sha256: loaded.file_sha256,
    tools: {
      allow: document.tools.allow ? document.tools.allow.length : null,
      deny: document.tools.deny?.length ?? 0,
      hide_denied: document.tools.hide_denied,
    },
    arguments: Object.keys(document.arguments),
    unconstrained: document.unconstrained,
    limits: {
      max_tool_calls: document.limits.max_tool_calls ?? null,
      rate: document.limits.rate ? { ...document.limits.rate } : null,
    },
    pins: Object.keys(document.pins),
  };
}
