/**
 * CaptureInput objects built directly from the committed golden captures, for in-process tests of the
 * pure verifier. Edits re-serialize a record and (by default) re-hash its manifest entry, so that the
 * branch under test — not the manifest — is what reacts.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CAPTURE_FILES } from "../../../src/evidence/format.ts";
import type { CaptureFileName, CaptureInput, FileState } from "../../../src/verify/capture-input.ts";
import { CAPTURE, type CaptureKind, goldenDir, sha256Hex } from "../../helpers/capture.ts";

const PARSED: CaptureFileName[] = [CAPTURE.manifest, CAPTURE.context, CAPTURE.stop, CAPTURE.decisions, CAPTURE.receipts];

/** A file read whole (a string is taken as its UTF-8 bytes). */
export function readState(content: Uint8Array | string): FileState {
  const bytes = typeof content === "string" ? Buffer.from(content) : content;
  return { kind: "read", bytes, sha256: sha256Hex(bytes) };
}

export const MISSING: FileState = { kind: "problem", problem: "missing", message: "missing" };

/** Every capture file of a v1 golden capture, as the loader would hand it over. */
export function goldenInput(kind: CaptureKind = "clean"): CaptureInput {
  return captureInputOf(goldenDir(kind));
}

/** The same for any capture directory (the v2 goldens of test/helpers/goldens-v2.ts). */
export function captureInputOf(dir: string): CaptureInput {
  const files = {} as Record<CaptureFileName, FileState>;
  for (const name of PARSED) {
    const path = join(dir, name);
    files[name] = existsSync(path) ? readState(new Uint8Array(readFileSync(path))) : MISSING;
  }
  const stderrPath = join(dir, CAPTURE.serverStderr);
  if (existsSync(stderrPath)) {
    const bytes = readFileSync(stderrPath);
    files[CAPTURE.serverStderr] = { kind: "hashed", bytes: bytes.length, sha256: sha256Hex(bytes) };
  } else {
    files[CAPTURE.serverStderr] = MISSING;
  }
  for (const name of Object.values(CAPTURE_FILES)) {
    if (files[name] !== undefined) continue;
    const path = join(dir, name);
    files[name] = existsSync(path) ? readState(new Uint8Array(readFileSync(path))) : MISSING;
  }
  return { files, strayEntries: [] };
}

export function bytesOf(input: CaptureInput, name: CaptureFileName): Buffer {
  const s = input.files[name];
  if (s.kind !== "read") throw new Error(`${name} is not read (${s.kind})`);
  return Buffer.from(s.bytes);
}

export function jsonOf(input: CaptureInput, name: CaptureFileName): any {
  return JSON.parse(bytesOf(input, name).toString("utf8"));
}

/** Replaces a file's state; with rehash (default) the manifest entry follows (dropped when the file is missing). */
export function setFile(input: CaptureInput, name: CaptureFileName, state: FileState, options: { rehash?: boolean } = {}): void {
  input.files[name] = state;
  if (options.rehash === false) return;
  const manifest = jsonOf(input, CAPTURE.manifest);
  if (state.kind === "read") manifest.files[name] = { bytes: state.bytes.length, sha256: state.sha256 };
  else if (state.kind === "hashed") manifest.files[name] = { bytes: state.bytes, sha256: state.sha256 };
  else if (state.problem === "missing") delete manifest.files[name];
  input.files[CAPTURE.manifest] = readState(Buffer.from(`${JSON.stringify(manifest)}\n`));
}

export function setBytes(input: CaptureInput, name: CaptureFileName, bytes: Uint8Array | string, options: { rehash?: boolean } = {}): void {
  setFile(input, name, readState(typeof bytes === "string" ? Buffer.from(bytes) : bytes), options);
}

/** Edits a JSON record in place (the callback mutates it). */
export function editJson(input: CaptureInput, name: CaptureFileName, edit: (record: any) => void, options: { rehash?: boolean } = {}): void {
  const record = jsonOf(input, name);
  edit(record);
  setBytes(input, name, `${JSON.stringify(record)}\n`, options);
}

export const editStop = (input: CaptureInput, edit: (data: any, record: any) => void, options: { rehash?: boolean } = {}) =>
  editJson(input, CAPTURE.stop, (r) => edit(r.data, r), options);

/** The complete lines of an NDJSON file (each parsed) and its tail. */
export function ndjsonRecords(input: CaptureInput, name: CaptureFileName): any[] {
  const text = bytesOf(input, name).toString("utf8");
  const lines = text.split("\n");
  lines.pop();
  return lines.map((l) => JSON.parse(l));
}

export function setRecords(input: CaptureInput, name: CaptureFileName, records: unknown[], tail = ""): Buffer {
  const bytes = Buffer.from(records.map((r) => `${JSON.stringify(r)}\n`).join("") + tail);
  setBytes(input, name, bytes);
  return bytes;
}
