/**
 * capture.dsse.json (wrap.md §12): written last, exclusively (0600), a DSSE envelope signed with
 * the session's key around the in-toto statement over every other file of the capture
 * (evidence/session-statement.ts). A session that never started has no stop record and so no
 * statement. A failure is an evidence failure like any other output (exit 3, one stderr line).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { IN_TOTO_PAYLOAD_TYPE, type Signer, signEnvelope } from "../evidence/dsse.ts";
import { CAPTURE_FILES } from "../evidence/format.ts";
import { writeRecordFile } from "../evidence/record-file.ts";
import { type WrapSessionFacts, wrapSessionStatement } from "../evidence/session-statement.ts";
import { sha256File } from "../shared/digest.ts";
import { errorMessage } from "../shared/errors.ts";
import type { SessionEvidence } from "./session-evidence.ts";

/** Every capture file the statement can cover: all but the envelope itself. */
const SUBJECT_FILES = Object.values(CAPTURE_FILES).filter((name) => name !== CAPTURE_FILES.envelope);

export function writeCaptureEnvelope(dir: string, evidence: SessionEvidence, signer: Signer, facts: Omit<WrapSessionFacts, "stop">): void {
  const stop = evidence.stopData;
  if (stop === null) return;
  try {
    const files: Record<string, string> = {};
    for (const name of SUBJECT_FILES) {
      const path = join(dir, name);
      if (existsSync(path)) files[name] = sha256File(path).sha256;
    }
    const statement = wrapSessionStatement(files, { ...facts, stop });
    const envelope = signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(statement)), signer);
    writeRecordFile(join(dir, CAPTURE_FILES.envelope), envelope);
  } catch (e) {
    evidence.reportFailure("capture envelope", `cannot write the signed capture statement: ${errorMessage(e)}`);
  }
}
