/**
 * A failing decision-log writer (wrap.md §1 --on-evidence-failure, §5 accounting, §8 incomplete):
 * fail closed by default, exit 3 either way, and a stop record whose accounting covers exactly the
 * complete lines on disk. Failures come from /dev/full, a full tmpfs, and the source-only fault seam.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { type TmpDir, tmpDir } from "../helpers/fixture.ts";
import { EVENT_SOURCE, VIGIL_SOURCE, type WrapSession, completeLines, readJson, sha256Hex, startWrap } from "../helpers/wrap.ts";

e2eSuite();

const POLICY = { version: 1, tools: { allow: ["*"], deny: ["exec"] } };
const FAULT_ENV = "VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES";

function expectEvidenceDenied(response: { result?: any; error?: unknown }): void {
  expect(response.error).toBeUndefined();
  expect(response.result.isError).toBe(true);
  expect(response.result.structuredContent.vigil).toMatchObject({ decision: "deny", error_code: "E_EVIDENCE_UNAVAILABLE" });
}

describe("append-mode decision log on /dev/full", () => {
  for (const mode of ["--allow-all", "--policy"] as const) {
    test(`fail closed (${mode}): the first call is denied E_EVIDENCE_UNAVAILABLE, vigil exits 3`, async () => {
      const s = startWrap({
        capture: false,
        ...(mode === "--policy" ? { policy: POLICY } : {}),
        flags: [...(mode === "--allow-all" ? ["--allow-all"] : []), "--decision-log", "/dev/full", "--event-source", EVENT_SOURCE],
      });
      await s.initialize();
      expectEvidenceDenied(await s.call("echo", { text: "first" }));
      expectEvidenceDenied(await s.call("echo", { text: "second" }));
      expect(s.recordedCalls()).toEqual([]);
      expect(await s.request("ping")).toMatchObject({ result: {} }); // other traffic still flows
      const { code } = await s.finish();
      expect(code).toBe(3);
      const stderr = s.client.stderrText();
      expect(stderr).toMatch(/decision log/);
      expect(stderr).toMatch(/ENOSPC|no space/i);
      // The observed child status is reported with the failure (wrap.md §3.5).
      expect(stderr).toMatch(/exit_code=0|code 0/);
    });
  }

  test("--on-evidence-failure continue: the call is forwarded, the exit status is still 3", async () => {
    const s = startWrap({
      capture: false,
      flags: ["--allow-all", "--decision-log", "/dev/full", "--event-source", EVENT_SOURCE, "--on-evidence-failure", "continue"],
    });
    await s.initialize();
    expect((await s.call("echo", { text: "through" })).result).toEqual({ content: [{ type: "text", text: "through" }] });
    expect(s.recordedCalls().map((m) => m.params.arguments.text)).toEqual(["through"]);
    expect((await s.finish()).code).toBe(3);
    expect(s.client.stderrText()).toMatch(/decision log/);
  });
});

/** Allowed calls until one is refused for lack of evidence (bounded); returns how many were forwarded. */
async function fillDecisionLog(s: WrapSession, maxCalls: number): Promise<number> {
  await s.initialize();
  let forwarded = 0;
  for (let i = 0; i < maxCalls; i++) {
    const response = await s.call("echo", { text: `call ${i} ${"p".repeat(40)}` });
    if ((response.result as any)?.isError) {
      expectEvidenceDenied(response);
      // Later emissions are refused and counted as dropped too.
      expectEvidenceDenied(await s.call("echo", { text: "after" }));
      return forwarded;
    }
    forwarded++;
  }
  throw new Error(`the decision log did not fail within ${maxCalls} calls`);
}

/** The stop record accounts for exactly the complete lines on disk (wrap.md §5, §8). */
function expectIncompleteAccounting(stop: any, logBytes: Uint8Array, forwarded: number): void {
  const { complete, count } = completeLines(logBytes);
  expect(count).toBe(forwarded);
  expect(stop.data).toMatchObject({
    decision_log: "incomplete",
    decision_events_written: count,
    decision_prefix_sha256: sha256Hex(complete),
  });
  // The failed emission and the one refused after it (wrap.md §5).
  expect(stop.data.decision_events_dropped).toBe(2);
}

describe("exclusive-create decision log on a full filesystem", () => {
  let small: TmpDir;
  let mount: string;
  let mounted = false;
  beforeAll(() => {
    small = tmpDir("vigil-e2e-tmpfs");
    mount = small.file("fs");
    mkdirSync(mount);
    const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", mount], { stderr: "pipe" });
    mounted = r.exitCode === 0;
    if (!mounted) console.warn(`skipping the tmpfs test: mount failed (${r.stderr.toString().trim()}); needs root`);
  });
  afterAll(() => {
    if (mounted) Bun.spawnSync(["umount", mount]);
    small.cleanup();
  });

  test("written = complete lines on disk, dropped ≥ 1, prefix excludes the partial tail, exit 3", async () => {
    if (!mounted) {
      console.warn("SKIPPED: cannot mount a size-limited tmpfs here");
      return;
    }
    const tmp = tmpDir("vigil-e2e");
    const log = `${mount}/decisions.ndjson`;
    const s = startWrap(
      {
        capture: false,
        policy: POLICY,
        flags: [
          "--decision-log", log, "--decision-log-new",
          "--session-stop-out", tmp.file("stop.json"),
          "--session-context-out", tmp.file("context.json"),
          "--event-source", EVENT_SOURCE,
        ],
      },
      tmp,
    );
    const forwarded = await fillDecisionLog(s, 400);
    expect(forwarded).toBeGreaterThan(0);
    expect((await s.finish()).code).toBe(3);
    expect(s.recordedCalls()).toHaveLength(forwarded);
    const bytes = readFileSync(log);
    expectIncompleteAccounting(readJson(tmp.file("stop.json")), bytes, forwarded);
    expect(readJson(tmp.file("stop.json")).data.session_context_id).toBe(readJson(tmp.file("context.json")).id);
    expect(s.client.stderrText()).toMatch(/decision log/);
    rmSync(log);
  });
});

describe("test-only fault seam VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES", () => {
  test("from source: the writer fails after N bytes and the stop record is incomplete", async () => {
    const s = startWrap({ vigil: VIGIL_SOURCE, policy: POLICY, flags: [], env: { ...process.env, [FAULT_ENV]: "2500" } });
    const forwarded = await fillDecisionLog(s, 100);
    expect((await s.finish()).code).toBe(3);
    const cap = s.capture();
    expect(completeLines(cap.decisionsRaw!).tail.length).toBeGreaterThan(0); // the seam leaves a partial line
    expectIncompleteAccounting(cap.stop, cap.decisionsRaw!, forwarded);
    expect(s.recordedCalls()).toHaveLength(forwarded);
  });

  test("the compiled release binary ignores the variable: the log is complete", async () => {
    const s = startWrap({ policy: POLICY, flags: [], env: { ...process.env, [FAULT_ENV]: "2500" } });
    await s.initialize();
    const calls = 20; // far more than 2500 bytes of decision records
    for (let i = 0; i < calls; i++) expect((await s.call("echo", { text: `call ${i} ${"p".repeat(40)}` })).result).toBeDefined();
    expect((await s.finish()).code).toBe(0);
    const cap = s.capture();
    expect(cap.decisionsRaw!.length).toBeGreaterThan(2500);
    expect(cap.stop.data).toMatchObject({
      decision_log: "complete",
      decision_events_written: calls,
      decision_events_dropped: 0,
      decision_prefix_sha256: sha256Hex(cap.decisionsRaw!),
    });
    expect(s.recordedCalls()).toHaveLength(calls);
  });
});

describe("single-record outputs that cannot be created", () => {
  test("a stop record whose file appeared meanwhile: never overwritten, exit 3, child status on stderr", async () => {
    const tmp = tmpDir("vigil-e2e");
    const stopFile = tmp.file("stop.json");
    const s = startWrap({ capture: false, flags: ["--allow-all", "--event-source", EVENT_SOURCE, "--session-stop-out", stopFile] }, tmp);
    await s.initialize();
    writeFileSync(stopFile, "earlier evidence\n"); // after validation (vigil is relaying), before the stop write
    expect((await s.call("echo", { text: "x" })).result).toBeDefined();
    expect((await s.finish()).code).toBe(3);
    expect(readFileSync(stopFile, "utf8")).toBe("earlier evidence\n");
    expect(s.client.stderrText()).toMatch(/session stop/);
    expect(s.client.stderrText()).toMatch(/exit_code=0|code 0/);
  });

  test("a context record that cannot be written closes the gate (E_EVIDENCE_UNAVAILABLE), exit 3", async () => {
    const tmp = tmpDir("vigil-e2e");
    const contextFile = tmp.file("context.json");
    const stopFile = tmp.file("stop.json");
    const s = startWrap(
      { capture: false, flags: ["--allow-all", "--event-source", EVENT_SOURCE, "--session-context-out", contextFile, "--session-stop-out", stopFile] },
      tmp,
    );
    await s.serverPid(); // spawned, so the flags were validated
    writeFileSync(contextFile, "earlier evidence\n");
    await s.initialize(); // the context record would be written after this response…
    await s.request("ping"); // …which is certainly attempted before the next response is relayed
    expectEvidenceDenied(await s.call("echo", { text: "x" }));
    expect(s.recordedCalls()).toEqual([]);
    expect((await s.finish()).code).toBe(3);
    expect(readFileSync(contextFile, "utf8")).toBe("earlier evidence\n");
    expect(readJson(stopFile).data.session_context_id).toBeNull();
    expect(s.client.stderrText()).toMatch(/session context/);
  });
});
