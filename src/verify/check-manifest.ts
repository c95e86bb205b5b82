/**
 * The manifest check (verify.md check 1): format, and every capture file's size and SHA-256 as
 * recorded at close. A difference means the capture changed after it was closed.
 *
 * v1 lists the context, stop, logs and server stderr; v2 may also list checkpoints.ndjson. The
 * envelope (capture.dsse.json) is never listed: it is written after the manifest and covers it.
 * In a v1 capture the v2-only files are not part of the format (as before v2 existed).
 */
import { CAPTURE_FILES, CAPTURE_FORMAT, CAPTURE_FORMAT_V2 } from "../evidence/format.ts";
import type { CaptureFileName, CaptureInput } from "./capture-input.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import { Manifest, type ManifestT } from "./schemas.ts";
import { problemFinding, readRecord } from "./read-record.ts";

const MANIFEST = CAPTURE_FILES.manifest;
const V2_ONLY = new Set<string>([CAPTURE_FILES.checkpoints, CAPTURE_FILES.envelope]);
const LISTABLE: Record<1 | 2, Set<string>> = {
  1: new Set(Object.values(CAPTURE_FILES).filter((n) => n !== MANIFEST && !V2_ONLY.has(n))),
  2: new Set(Object.values(CAPTURE_FILES).filter((n) => n !== MANIFEST && n !== CAPTURE_FILES.envelope)),
};

export interface CheckedManifest {
  manifest: ManifestT;
  /** The capture format's version: 1 (no chains, never signed) or 2. */
  version: 1 | 2;
}

export function checkManifest(input: CaptureInput, findings: Finding[]): CheckedManifest | null {
  const state = input.files[MANIFEST];
  if (state.kind === "problem" && state.problem === "missing") {
    findings.push(unknownFinding("file_missing", MANIFEST, "no manifest: the capture was never closed"));
    return null;
  }
  const manifest = readRecord(state, MANIFEST, Manifest, findings) as ManifestT | null;
  if (manifest === null) return null;
  if (manifest.format !== CAPTURE_FORMAT && manifest.format !== CAPTURE_FORMAT_V2) {
    findings.push(unknownFinding("manifest_format_unsupported", MANIFEST, `format ${JSON.stringify(manifest.format.slice(0, 64))}, expected ${CAPTURE_FORMAT} or ${CAPTURE_FORMAT_V2}`));
    return null;
  }
  const version = manifest.format === CAPTURE_FORMAT_V2 ? 2 : 1;
  const listable = LISTABLE[version];
  for (const [name, entry] of Object.entries(manifest.files)) {
    if (!listable.has(name)) {
      findings.push(unknownFinding("manifest_mismatch", MANIFEST, `lists ${JSON.stringify(name.slice(0, 64))}, which is not a listed file of a ${manifest.format} capture`));
      continue;
    }
    const disk = input.files[name as CaptureFileName];
    if (disk.kind === "problem") {
      findings.push(disk.problem === "missing" ? unknownFinding("manifest_file_missing", name, "listed in the manifest but missing") : problemFinding(disk, name));
      continue;
    }
    const size = disk.kind === "read" ? disk.bytes.length : disk.bytes;
    if (size !== entry.bytes || disk.sha256 !== entry.sha256) {
      findings.push(unknownFinding("manifest_file_changed", name, `changed after the capture was closed (${size} bytes on disk, ${entry.bytes} recorded; sha256 ${disk.sha256 === entry.sha256 ? "equal" : "differs"})`));
    }
  }
  for (const name of Object.values(CAPTURE_FILES)) {
    if (name === MANIFEST || (version === 2 && name === CAPTURE_FILES.envelope)) continue;
    const disk = input.files[name];
    const onDisk = !(disk.kind === "problem" && disk.problem === "missing");
    if (!onDisk || name in manifest.files) continue;
    findings.push(unknownFinding("manifest_file_unlisted", name, listable.has(name) ? "present but not listed in the manifest" : `unexpected entry in a ${manifest.format} capture`));
  }
  for (const stray of input.strayEntries) {
    findings.push(unknownFinding("manifest_file_unlisted", stray.slice(0, 128), "unexpected entry in the capture directory"));
  }
  return { manifest, version };
}
