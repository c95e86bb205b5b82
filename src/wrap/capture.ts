/**
 * The last files of a capture (wrap.md §9, §12), once every other one is closed: capture.json,
 * then — with a signing key — capture.dsse.json, whose statement covers capture.json too.
 */
import type { Signer } from "../evidence/dsse.ts";
import { buildManifest } from "../evidence/manifest.ts";
import { writeRecordFile } from "../evidence/record-file.ts";
import { VERSION } from "../shared/build-info.ts";
import { canonicalSha256, sha256File } from "../shared/digest.ts";
import { errorMessage } from "../shared/errors.ts";
import { writeCaptureEnvelope } from "./capture-envelope.ts";
import type { WrapOptions } from "./options.ts";
import type { OutputPlan } from "./output-plan.ts";
import type { PolicyGate } from "./policy-gate.ts";
import type { SessionEvidence } from "./session-evidence.ts";

export function writeCaptureFiles(plan: OutputPlan, o: WrapOptions, evidence: SessionEvidence, gate: PolicyGate, signer: Signer | null): void {
  if (plan.manifest === null || plan.captureDir === null) return;
  // Hashed once: the manifest and the statement name the same executable.
  const binarySha256 = sha256File(process.execPath).sha256;
  try {
    const manifest = buildManifest({
      dir: plan.captureDir,
      eventSource: o.eventSource ?? "",
      serverId: o.serverId,
      sessionId: evidence.sessionId,
      vigilVersion: VERSION,
      binarySha256,
      commandSha256: canonicalSha256(o.command),
      policy: gate.digest === null ? null : { digest: gate.digest, sha256_of_file: gate.fileSha256 ?? "" },
    });
    writeRecordFile(plan.manifest, manifest);
  } catch (e) {
    evidence.reportFailure("capture manifest", `cannot write the capture manifest: ${errorMessage(e)}`);
  }
  if (signer !== null) {
    writeCaptureEnvelope(plan.captureDir, evidence, signer, { eventSource: o.eventSource ?? "", policyDigest: gate.digest, version: VERSION, binarySha256 });
  }
}
