/**
 * A signed in-toto statement (capture.dsse.json, a serve session's stops/<n>.dsse.json) checked
 * against trusted keys and against the files it covers. Pure; the predicate is left to the caller,
 * which knows what it must agree with.
 *
 * 1. the envelope is there (`signature_missing`), strict JSON, and verifies under a trusted key
 *    (verifyEnvelope: `envelope_invalid`, `signature_invalid`, `key_untrusted`);
 * 2. its payload is an in-toto Statement v1 of the expected predicate type, strictly (`envelope_invalid`);
 * 3. its subjects are exactly the files present: a present file that is no subject is
 *    `file_unsigned`, a subject whose file is absent `subject_missing`, a digest that differs
 *    `subject_mismatch`.
 */
import * as v from "valibot";
import { IN_TOTO_PAYLOAD_TYPE, type TrustedKey, verifyEnvelope } from "../evidence/dsse.ts";
import { STATEMENT_TYPE } from "../evidence/statement.ts";
import { parseStrictJson } from "../shared/strict-json.ts";
import type { FileState } from "./capture-input.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import { problemFinding } from "./read-record.ts";
import { Hex64, Text, firstIssue } from "./schemas.ts";
import { RECORD_MAX_DEPTH, parseRecord } from "./strict-records.ts";

/** A statement names at most this many subjects (a capture has 7 files). */
export const MAX_SUBJECTS = 64;

const Subject = v.strictObject({ name: Text, digest: v.strictObject({ sha256: Hex64 }) });
const Statement = v.strictObject({
  _type: v.literal(STATEMENT_TYPE),
  subject: v.pipe(v.array(Subject), v.minLength(1, "no subjects"), v.maxLength(MAX_SUBJECTS, `more than ${MAX_SUBJECTS} subjects`)),
  predicateType: Text,
  predicate: v.record(v.string(), v.unknown()),
});

export interface StatementExpectation {
  /** The envelope's file name, as findings name it. */
  file: string;
  state: FileState;
  trusted: readonly TrustedKey[];
  predicateType: string;
  /** Every file the statement may cover, by name (the envelope itself excluded), as loaded. */
  files: ReadonlyMap<string, FileState>;
  /** Why there is no envelope, when it is missing (the `signature_missing` message). */
  missingMessage: string;
}

export interface StatementResult {
  findings: Finding[];
  /** The trusted key whose signature verified; null when none did. */
  keyid: string | null;
  /** The subjects' names, once the statement is known to be signed and well formed. */
  subjects: string[] | null;
  /** The predicate (still to be checked by the caller), once the statement is signed and well formed. */
  predicate: Record<string, unknown> | null;
}

export function checkStatement(x: StatementExpectation): StatementResult {
  const findings: Finding[] = [];
  const fail = (): StatementResult => ({ findings, keyid: null, subjects: null, predicate: null });
  if (x.state.kind === "problem") {
    findings.push(x.state.problem === "missing" ? unknownFinding("signature_missing", x.file, x.missingMessage) : problemFinding(x.state, x.file));
    return fail();
  }
  if (x.state.kind !== "read") return fail();
  const parsed = parseRecord(x.state.bytes, x.file);
  if (!parsed.ok) {
    findings.push(parsed.finding);
    return fail();
  }
  const check = verifyEnvelope(parsed.value, x.trusted, IN_TOTO_PAYLOAD_TYPE);
  if (!check.ok) {
    findings.push(unknownFinding(check.code, x.file, check.message));
    return fail();
  }
  const keyid = check.keyid;
  const signedButBad = (message: string): StatementResult => {
    findings.push(unknownFinding("envelope_invalid", x.file, message));
    return { findings, keyid, subjects: null, predicate: null };
  };
  const payload = parseStrictJson(check.payload, { maxDepth: RECORD_MAX_DEPTH });
  if (!payload.ok) return signedButBad(`payload is not strict JSON: ${payload.message}`);
  const st = v.safeParse(Statement, payload.value);
  if (!st.success) return signedButBad(`payload is not an in-toto Statement v1: ${firstIssue(st.issues)}`);
  if (st.output.predicateType !== x.predicateType) {
    return signedButBad(`predicateType ${JSON.stringify(st.output.predicateType.slice(0, 128))}, expected ${x.predicateType}`);
  }
  const subjects = new Map<string, string>();
  for (const s of st.output.subject) {
    if (subjects.has(s.name)) return signedButBad(`subject ${JSON.stringify(s.name.slice(0, 128))} is listed twice`);
    subjects.set(s.name, s.digest.sha256);
  }
  findings.push(...subjectFindings(subjects, x.files));
  return { findings, keyid, subjects: [...subjects.keys()].sort(), predicate: st.output.predicate };
}

/** Subjects against the files as loaded: each present file covered, each subject present and equal. */
export function subjectFindings(subjects: ReadonlyMap<string, string>, files: ReadonlyMap<string, FileState>): Finding[] {
  const findings: Finding[] = [];
  for (const [name, sha256] of subjects) {
    const state = files.get(name);
    if (state === undefined || (state.kind === "problem" && state.problem === "missing")) {
      findings.push(unknownFinding("subject_missing", name.slice(0, 128), "signed as a subject, but the file is not there"));
      continue;
    }
    // A file that could not be read is reported by its own reader; there is no digest to compare.
    if (state.kind !== "problem" && state.sha256 !== sha256) {
      findings.push(unknownFinding("subject_mismatch", name, "SHA-256 differs from the signed subject's digest (the file changed after it was signed)"));
    }
  }
  for (const [name, state] of files) {
    const present = !(state.kind === "problem" && state.problem === "missing");
    if (present && !subjects.has(name)) findings.push(unknownFinding("file_unsigned", name, "present, but not a subject of the signed statement"));
  }
  return findings;
}
