/** What a verification says (verify.md "Verdicts"): the verdict, its reasons, and what was authenticated. */
import type { ChainHead } from "../evidence/chain.ts";
import { type Finding, type Verdict, verdictOf } from "./findings.ts";

/**
 * Who vouches for the capture. `authenticated` only when a trusted key's signature verified and
 * everything it covers agrees with the files; `keyid` names the trusted key whose signature
 * verified (also when what it covers then disagreed); `covered` is what the signature vouches for
 * (the statement's subjects, each log's count and head, the checkpoints), only when authenticated.
 */
export interface Authentication {
  authenticated: boolean;
  keyid: string | null;
  covered: { files: string[]; logs: Record<string, ChainHead>; checkpoints: number } | null;
  /** Keys were given (`--public-key` / `--trusted-keys`): the text report says why it is not authenticated. */
  keysGiven: boolean;
}

export interface VerifyReport {
  verdict: Verdict;
  reasons: Finding[];
  session_id: string | null;
  server: { exit_code: number | null; signal: number | null } | null;
  decisions: { written: number | null; dropped: number | null; verified: number };
  authentication: Authentication;
}

export const notAuthenticated = (keysGiven: boolean): Authentication => ({ authenticated: false, keyid: null, covered: null, keysGiven });

/** The report of a set of findings; a finding reached twice (say, by the manifest check and by its reader) is listed once. */
export function buildReport(all: readonly Finding[], facts: Omit<VerifyReport, "verdict" | "reasons">): VerifyReport {
  const seen = new Set<string>();
  const reasons = all.filter((f) => {
    const key = `${f.code}\u0000${f.file}\u0000${f.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return { verdict: verdictOf(reasons), reasons, ...facts };
}
