/**
 * The I/O half of verify: reads each capture file within its bound (no JSON is materialized here).
 */
import { opendirSync } from "node:fs";
import { join } from "node:path";
import { CAPTURE_FILES } from "../evidence/format.ts";
import { sha256Hex } from "../shared/digest.ts";
import { hashBounded, readBounded } from "../shared/durable/bounded-file.ts";
import { BOUNDS, type CaptureFileName, type CaptureInput, type FileState } from "./capture-input.ts";

const READ_LIMITS: Record<CaptureFileName, number | "hash"> = {
  [CAPTURE_FILES.manifest]: BOUNDS.companionBytes,
  [CAPTURE_FILES.context]: BOUNDS.companionBytes,
  [CAPTURE_FILES.stop]: BOUNDS.companionBytes,
  [CAPTURE_FILES.decisions]: BOUNDS.decisionBytes,
  [CAPTURE_FILES.receipts]: BOUNDS.receiptBytes,
  [CAPTURE_FILES.serverStderr]: "hash",
  [CAPTURE_FILES.checkpoints]: BOUNDS.checkpointBytes,
  [CAPTURE_FILES.envelope]: BOUNDS.envelopeBytes,
};

/** At most this many unexpected directory entries are named in the report. */
const MAX_STRAY = 20;

export function loadCapture(dir: string): CaptureInput {
  const files = {} as Record<CaptureFileName, FileState>;
  for (const [name, limit] of Object.entries(READ_LIMITS) as [CaptureFileName, number | "hash"][]) {
    files[name] = limit === "hash" ? hashFile(join(dir, name)) : readFileState(join(dir, name), limit);
  }
  const known = new Set<string>(Object.keys(READ_LIMITS));
  const strayEntries: string[] = [];
  const dirHandle = opendirSync(dir);
  try {
    for (let entry = dirHandle.readSync(); entry !== null && strayEntries.length < MAX_STRAY; entry = dirHandle.readSync()) {
      if (!known.has(entry.name)) strayEntries.push(entry.name);
    }
  } finally {
    dirHandle.closeSync();
  }
  return { files, strayEntries };
}

/** A file read whole within `limit` bytes (a regular file, never through a link), or why it was not. */
export function readFileState(path: string, limit: number): FileState {
  const r = readBounded(path, limit);
  if (!r.ok) return { kind: "problem", problem: r.problem, message: r.message };
  return { kind: "read", bytes: r.bytes, sha256: sha256Hex(r.bytes) };
}

function hashFile(path: string): FileState {
  const r = hashBounded(path, BOUNDS.stderrBytes);
  if (!r.ok) return { kind: "problem", problem: r.problem, message: r.message };
  return { kind: "hashed", bytes: r.bytes, sha256: r.sha256 };
}
