/** Writes capture.json, last, once every other capture file is closed (wrap.md §9). */
import { buildManifest } from "../evidence/manifest.ts";
import { writeRecordFile } from "../evidence/record-file.ts";
import { VERSION } from "../shared/build-info.ts";
import { canonicalSha256, sha256File } from "../shared/digest.ts";
import { errorMessage } from "../shared/errors.ts";
import type { WrapOptions } from "./options.ts";
import type { OutputPlan } from "./output-plan.ts";
import type { PolicyGate } from "./policy-gate.ts";
import type { SessionEvidence } from "./session-evidence.ts";

export function writeCaptureManifest(plan: OutputPlan, o: WrapOptions, evidence: SessionEvidence, gate: PolicyGate): void {
  if (plan.manifest === null || plan.captureDir === null) return;
  try {
    const manifest = buildManifest({
      dir: plan.captureDir,
      eventSource: o.eventSource ?? "",
      serverId: o.serverId,
      sessionId: evidence.sessionId,
      vigilVersion: VERSION,
      binarySha256: sha256File(process.execPath).sha256,
      commandSha256: canonicalSha256(o.command),
      policy: gate.digest === null ? null : { digest: gate.digest, sha256_of_file: gate.fileSha256 ?? "" },
    });
    writeRecordFile(plan.manifest, manifest);
  } catch (e) {
    evidence.reportFailure("capture manifest", `cannot write the capture manifest: ${errorMessage(e)}`);
  }
}
