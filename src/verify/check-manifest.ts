/**
 * The manifest check (verify.md check 1): format, and every capture file's size and SHA-256 as
 * recorded at close. A difference means the capture changed after it was closed.
 */
import { CAPTURE_FILES, CAPTURE_FORMAT } from "../evidence/format.ts";
import type { CaptureFileName, CaptureInput } from "./capture-input.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import { Manifest, type ManifestT } from "./schemas.ts";
import { problemFinding, readRecord } from "./read-record.ts";

const MANIFEST = CAPTURE_FILES.manifest;
const LISTABLE = new Set<string>(Object.values(CAPTURE_FILES).filter((n) => n !== MANIFEST));

export function checkManifest(input: CaptureInput, findings: Finding[]): ManifestT | null {
  const state = input.files[MANIFEST];
  if (state.kind === "problem" && state.problem === "missing") {
    findings.push(unknownFinding("file_missing", MANIFEST, "no manifest: the capture was never closed"));
    return null;
  }
  const manifest = readRecord(state, MANIFEST, Manifest, findings) as ManifestT | null;
  if (manifest === null) return null;
  if (manifest.format !== CAPTURE_FORMAT) {
    findings.push(unknownFinding("manifest_format_unsupported", MANIFEST, `format ${JSON.stringify(manifest.format.slice(0, 64))}, expected ${CAPTURE_FORMAT}`));
    return null;
  }
  for (const [name, entry] of Object.entries(manifest.files)) {
    if (!LISTABLE.has(name)) {
      findings.push(unknownFinding("manifest_mismatch", MANIFEST, `lists ${JSON.stringify(name.slice(0, 64))}, which is not a capture file`));
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
  for (const name of LISTABLE) {
    const disk = input.files[name as CaptureFileName];
    const onDisk = !(disk.kind === "problem" && disk.problem === "missing");
    if (onDisk && !(name in manifest.files)) findings.push(unknownFinding("manifest_file_unlisted", name, "present but not listed in the manifest"));
  }
  for (const stray of input.strayEntries) {
    findings.push(unknownFinding("manifest_file_unlisted", stray.slice(0, 128), "unexpected entry in the capture directory"));
  }
  return manifest;
}
