/**
 * The capture manifest (wrap.md §9): raw-byte sizes and hashes of every capture file at close.
 * It records what was on disk; it does not authenticate its producer. capture.dsse.json, written
 * after it and covering it, is never listed.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { sha256File } from "../shared/digest.ts";
import { CAPTURE_FILES, CAPTURE_FORMAT_V2, rfc3339 } from "./format.ts";

export interface ManifestInput {
  dir: string;
  eventSource: string;
  serverId: string;
  sessionId: string | null;
  vigilVersion: string;
  binarySha256: string;
  commandSha256: string;
  policy: { digest: string; sha256_of_file: string } | null;
}

const HASHED_FILES = [
  CAPTURE_FILES.context,
  CAPTURE_FILES.stop,
  CAPTURE_FILES.decisions,
  CAPTURE_FILES.receipts,
  CAPTURE_FILES.serverStderr,
  CAPTURE_FILES.checkpoints,
] as const;

export function buildManifest(input: ManifestInput): Record<string, unknown> {
  const files: Record<string, { bytes: number; sha256: string }> = {};
  for (const name of HASHED_FILES) {
    const path = join(input.dir, name);
    if (!existsSync(path)) continue;
    files[name] = sha256File(path);
  }
  return {
    // v2: the logs are hash-chained and the stop record is v2 (wrap always writes v2 now).
    format: CAPTURE_FORMAT_V2,
    created_at: rfc3339(),
    event_source: input.eventSource,
    server_id: input.serverId,
    session_id: input.sessionId,
    vigil: { version: input.vigilVersion, binary_sha256: input.binarySha256 },
    command_sha256: input.commandSha256,
    policy: input.policy,
    files,
  };
}
