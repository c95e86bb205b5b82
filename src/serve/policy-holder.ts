/**
 * The policy in force in `vigil serve`, held in one place so that a reload (reload.ts) replaces it
 * for every open session at once: each session's tool gateway and decision recorder read it at
 * decision time, so the next decision of a session opened before the reload is taken under the new
 * policy and its record carries the new digest, and the stop statements name the digest in force.
 */
import type { LoadedPolicy } from "../policy/load.ts";

/** Where the policy in force is read (null: no policy, every call allowed with `no_policy`). */
export interface PolicySource {
  readonly current: LoadedPolicy | null;
}

export class PolicyHolder implements PolicySource {
  constructor(private policy: LoadedPolicy | null) {}

  get current(): LoadedPolicy | null {
    return this.policy;
  }

  /** The digest decision records carry (`sha256:` + canonical JSON digest), or null without a policy. */
  get digest(): string | null {
    return this.policy?.digest ?? null;
  }

  replace(policy: LoadedPolicy | null): void {
    this.policy = policy;
  }
}
