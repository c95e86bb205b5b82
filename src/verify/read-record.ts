/** Strict, schema-checked reading of one bounded companion record. */
import * as v from "valibot";
import type { FileState } from "./capture-input.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import { firstIssue } from "./schemas.ts";
import { parseRecord } from "./strict-records.ts";

/** Parses a companion file (already bounded) strictly and against its schema; null with a finding otherwise. */
export function readRecord(state: FileState, file: string, schema: v.GenericSchema, findings: Finding[]): unknown {
  if (state.kind !== "read") {
    if (state.kind === "problem" && state.problem !== "missing") findings.push(problemFinding(state, file));
    return null;
  }
  const parsed = parseRecord(state.bytes, file);
  if (!parsed.ok) {
    findings.push(parsed.finding);
    return null;
  }
  const r = v.safeParse(schema, parsed.value);
  if (!r.success) {
    findings.push(unknownFinding("record_invalid", file, firstIssue(r.issues)));
    return null;
  }
  return r.output;
}

export function problemFinding(state: Extract<FileState, { kind: "problem" }>, file: string): Finding {
  const code = state.problem === "missing" ? "file_missing" : state.problem === "not_regular" ? "file_not_regular" : state.problem === "too_large" ? "file_too_large" : "file_unreadable";
  return unknownFinding(code, file, state.message);
}
