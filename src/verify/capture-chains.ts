/**
 * A v2 capture's chains against what its stop record names, and its checkpoints file against the
 * stop record and (with keys) against the chains. Pure.
 */
import type { ChainHead } from "../evidence/chain.ts";
import type { TrustedKey } from "../evidence/dsse.ts";
import { CAPTURE_FILES } from "../evidence/format.ts";
import { BOUNDS, type CaptureInput } from "./capture-input.ts";
import { type CheckpointsResult, checkCheckpoints } from "./check-checkpoints.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import type { RecomputedChain } from "./log-chain.ts";
import { problemFinding } from "./read-record.ts";
import type { StopRecordV2T } from "./schemas.ts";

const CHAINED = new Set<string>([CAPTURE_FILES.decisions, CAPTURE_FILES.receipts]);
const CHECKPOINTS = CAPTURE_FILES.checkpoints;

/** Each recomputed chain's head: what the stop record, the predicate and the checkpoints must name. */
export function headsOf(chains: ReadonlyMap<string, RecomputedChain>): Map<string, ChainHead> {
  return new Map([...chains].map(([name, c]) => [name, c.head]));
}

/**
 * The stop record's `chains` must name exactly the logs of the capture, each with its recomputed
 * count and head. A log that could not be checked (unreadable, no retained accounting) is reported
 * by its own check and is not compared here.
 */
export function checkStopChains(input: CaptureInput, stop: StopRecordV2T, chains: ReadonlyMap<string, RecomputedChain>): Finding[] {
  const findings: Finding[] = [];
  const named = stop.data.chains;
  const mismatch = (message: string) => findings.push(unknownFinding("chain_head_mismatch", CAPTURE_FILES.stop, message));
  for (const [name, head] of Object.entries(named)) {
    const shown = JSON.stringify(name.slice(0, 64));
    const chain = chains.get(name);
    if (chain === undefined) {
      const state = CHAINED.has(name) ? input.files[name as keyof CaptureInput["files"]] : undefined;
      if (state === undefined || (state.kind === "problem" && state.problem === "missing")) mismatch(`chains names ${shown}, which is not a log of this capture`);
      continue;
    }
    // A broken chain is its own finding (chain_broken); its head can then only differ.
    if (chain.break !== null) continue;
    if (head.count !== chain.head.count) mismatch(`chains.${name}: count ${head.count}, but the log has ${chain.head.count} complete records`);
    else if (head.head !== chain.head.head) mismatch(`chains.${name}: head differs from the log's recomputed chain`);
  }
  for (const name of chains.keys()) {
    if (!Object.hasOwn(named, name)) mismatch(`chains does not name ${name}, a log of this capture`);
  }
  return findings;
}

/** Complete lines of checkpoints.ndjson (0 when absent), counted without parsing; null when it could not be read. */
export function checkpointLines(input: CaptureInput): number | null {
  const state = input.files[CHECKPOINTS];
  if (state.kind === "problem") return state.problem === "missing" ? 0 : null;
  if (state.kind !== "read") return null;
  let n = 0;
  for (let at = state.bytes.indexOf(0x0a); at >= 0; at = state.bytes.indexOf(0x0a, at + 1)) n++;
  return n;
}

/** The stop record's `checkpoints` against the file: null says no checkpoints (no key), else the count of lines. */
export function checkCheckpointCount(input: CaptureInput, stop: StopRecordV2T): Finding[] {
  const state = input.files[CHECKPOINTS];
  if (state.kind === "problem" && state.problem !== "missing") return [problemFinding(state, CHECKPOINTS)];
  const lines = checkpointLines(input);
  const claimed = stop.data.checkpoints;
  const present = state.kind !== "problem";
  if (claimed === null) {
    return present ? [unknownFinding("checkpoint_mismatch", CHECKPOINTS, "present, but session-stop says no checkpoints were written (an unsigned session)")] : [];
  }
  if (lines !== claimed.written) {
    return [unknownFinding("checkpoint_mismatch", CHECKPOINTS, `${lines ?? "unreadable:"} checkpoint lines, but session-stop says ${claimed.written} written`)];
  }
  return [];
}

export interface CheckpointIdentity {
  sessionId: string;
  eventSource: string;
}

/** The signed checkpoints against trusted keys and the recomputed chains; null result when there is no file. */
export function verifyCaptureCheckpoints(
  input: CaptureInput,
  trusted: readonly TrustedKey[],
  identity: CheckpointIdentity,
  chains: ReadonlyMap<string, RecomputedChain>,
  tailAllowed: boolean,
): { findings: Finding[]; result: CheckpointsResult | null } {
  const state = input.files[CHECKPOINTS];
  if (state.kind !== "read") return { findings: state.kind === "problem" && state.problem !== "missing" ? [problemFinding(state, CHECKPOINTS)] : [], result: null };
  const result = checkCheckpoints({
    bytes: state.bytes,
    maxLines: BOUNDS.checkpointLines,
    trusted,
    sessionId: identity.sessionId,
    eventSource: identity.eventSource,
    headAt: (log, count) => chains.get(log)?.headAt(count) ?? null,
    tailAllowed,
  });
  return { findings: result.issues.map((i) => unknownFinding(i.code, CHECKPOINTS, i.message)), result };
}
