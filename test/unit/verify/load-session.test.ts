/** The I/O half of `vigil verify sessions/<name>` (loadSession) and how verify tells a session directory from a capture. */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { evidenceDirKind } from "../../../src/verify/run.ts";
import { loadSession } from "../../../src/verify/session/load-session.ts";
import { verifySession } from "../../../src/verify/session/verify-session.ts";
import { C, D, E, SessionBuilder, testKey } from "./session-builder.ts";

let root: string | undefined;
afterEach(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** sessions/<name>/ on disk from a builder; other session files (transcript) beside the evidence. */
function writeSession(b: SessionBuilder): string {
  root = mkdtempSync(join(tmpdir(), "vigil-load-session-"));
  const dir = join(root, "sessions", b.name);
  mkdirSync(dir, { recursive: true });
  for (const f of [D, E, C]) if (b.exists[f]) writeFileSync(join(dir, f), b.bytes(f));
  if (b.stops.length > 0) mkdirSync(join(dir, "stops"));
  b.stops.forEach((bytes, i) => writeFileSync(join(dir, "stops", `${i + 1}.dsse.json`), bytes));
  writeFileSync(join(dir, "transcript.jsonl"), "not evidence\n");
  writeFileSync(join(dir, "mcp-events.json"), "{}");
  return dir;
}

const key = testKey();
const signedSession = () => new SessionBuilder("night-shift").decision().received(0).delivered([0]).checkpoint(key).stop(key);

describe("loadSession", () => {
  test("reads the evidence files, names the session after its directory, ignores the rest", () => {
    const dir = writeSession(signedSession());
    writeFileSync(join(dir, "stops", "notes.txt"), "x");
    writeFileSync(join(dir, "stops", "01.dsse.json"), "x");
    const input = loadSession(dir);
    expect(input.name).toBe("night-shift");
    expect([input.decisions.kind, input.events.kind, input.checkpoints.kind]).toEqual(["read", "read", "read"]);
    expect(input.stops.kind === "read" && input.stops.entries.map((e) => e.file)).toEqual(["stops/1.dsse.json"]);
    const r = verifySession(input, { trusted: [key.trusted] });
    expect(r.reasons).toEqual([]);
    expect(r.verdict).toBe("closed");
  });

  test("a symlinked log or stops directory is refused, not followed", () => {
    const dir = writeSession(signedSession());
    const elsewhere = join(root!, "elsewhere.ndjson");
    writeFileSync(elsewhere, "");
    rmSync(join(dir, E));
    symlinkSync(elsewhere, join(dir, E));
    rmSync(join(dir, "stops"), { recursive: true });
    symlinkSync(root!, join(dir, "stops"));
    const input = loadSession(dir);
    expect(input.events).toMatchObject({ kind: "problem", problem: "not_regular" });
    expect(input.stops).toMatchObject({ kind: "problem", problem: "not_regular" });
    const codes = verifySession(input, { trusted: [key.trusted] }).reasons.map((f) => [f.code, f.file]);
    expect(codes).toContainEqual(["file_not_regular", E]);
    expect(codes).toContainEqual(["file_not_regular", "stops"]);
  });

  test("no stops directory reads as no stop envelopes", () => {
    const dir = writeSession(new SessionBuilder().received(0).delivered([0]));
    expect(loadSession(dir).stops).toEqual({ kind: "read", entries: [] });
  });
});

describe("evidenceDirKind", () => {
  test("a serve session directory: an event ledger, stop envelopes, or a decision log alone", () => {
    expect(evidenceDirKind(writeSession(new SessionBuilder().received(0)))).toBe("session");
    expect(evidenceDirKind(writeSession(new SessionBuilder().decision()))).toBe("session");
  });

  test("a manifest or a stop record makes it a capture", () => {
    const dir = writeSession(new SessionBuilder().received(0));
    writeFileSync(join(dir, "capture.json"), "{}");
    expect(evidenceDirKind(dir)).toBe("capture");
  });
});
