/**
 * Bad input in both directions (wrap.md §10): refused client frames are never forwarded, are
 * answered only when they carry a recoverable id (never when they are notifications), are counted,
 * and the session goes on; server stdout pollution and over-cap messages never corrupt the client's
 * stream.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { type TmpDir, fixtureArgv, tmpDir } from "../helpers/fixture.ts";
import { EVENT_SOURCE, type WrapSession, runVigil, startWrap, writePolicy } from "../helpers/wrap.ts";

e2eSuite();

let pings = 0;

/**
 * Sends `frame` then a ping, and returns what vigil answered before the ping's response (vigil
 * handles client frames in order, so an answer to `frame` comes first). Never waits on time.
 */
async function exchange(s: WrapSession, frame: string | Uint8Array): Promise<any[]> {
  s.client.send(frame);
  const id = `ping-${++pings}`;
  s.client.send({ jsonrpc: "2.0", id, method: "ping" });
  const replies: any[] = [];
  for (;;) {
    const line = await s.client.next(10_000);
    if (line === null) throw new Error(`vigil closed stdout; stderr:\n${s.client.stderrText()}`);
    const msg = JSON.parse(line);
    if (msg.id === id) {
      expect(msg.result).toEqual({});
      return replies;
    }
    replies.push(msg);
  }
}

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : Buffer.from(p))));

/** Every bad frame carries "BAD" so the server's record can be searched for it. */
const REQUEST_ROWS: [string, string | Uint8Array, number, -32700 | -32600 | null][] = [
  ["not JSON", '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo BAD"\n', 11, -32700],
  ["not JSON, no id", "BAD this is not json\n", 0, null],
  ["invalid UTF-8", bytes('{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"BAD', [0xff, 0xfe, 0xc3], '"}}}\n'), 12, -32700],
  ["a batch", '[{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":{"text":"BAD"}}}]\n', 0, null],
  ["duplicate top-level key", '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"exec"},"params":{"name":"echo","arguments":{"text":"BAD"}}}\n', 14, -32600],
  ["duplicate key nested in params", '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"echo","arguments":{"text":"BAD","text":"ok"}}}\n', 15, -32600],
  ['jsonrpc "1.0"', '{"jsonrpc":"1.0","id":16,"method":"tools/call","params":{"name":"echo","arguments":{"text":"BAD"}}}\n', 16, -32600],
  ["no jsonrpc member", '{"id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"BAD"}}}\n', 17, -32600],
  ["a string", '"BAD"\n', 0, null],
  ["a number array", '[1,2,"BAD"]\n', 0, null],
];

describe("refused client frames", () => {
  test("each row of §10 is not forwarded, answered when it has an id, counted, and the session continues", async () => {
    const s = startWrap();
    await s.initialize();
    for (const [name, frame, id, code] of REQUEST_ROWS) {
      const replies = await exchange(s, frame);
      if (code === null) {
        // No recoverable id: at most a -32600/-32700 error with a null id.
        for (const r of replies) {
          expect({ name, id: r.id }).toEqual({ name, id: null });
          expect([-32700, -32600]).toContain(r.error?.code);
        }
      } else {
        expect({ name, replies }).toEqual({ name, replies: [{ jsonrpc: "2.0", id, error: expect.objectContaining({ code }) }] });
      }
      // The session continues: a valid call still goes through.
      expect((await s.call("echo", { text: `after ${name}` })).result).toEqual({ content: [{ type: "text", text: `after ${name}` }] });
    }
    expect((await s.finish()).code).toBe(0);
    expect(s.record().filter((l) => l.includes("BAD"))).toEqual([]);
    expect(s.recordedCalls()).toHaveLength(REQUEST_ROWS.length);
    const stop = s.capture().stop.data;
    expect(stop.counts.rejected_frames).toBe(REQUEST_ROWS.length);
    expect(stop.counts.oversized).toBe(0);
    expect(s.client.stderrText().match(/^vigil: .*refused/gm)?.length).toBe(REQUEST_ROWS.length);
  });

  test("a malformed notification gets no answer (even with an id-like member nested inside)", async () => {
    const s = startWrap();
    await s.initialize();
    const notifications = [
      '{"jsonrpc":"1.0","method":"notifications/BAD"}\n',
      '{"jsonrpc":"2.0","method":"notifications/BAD","params":{"a":1,"a":2}}\n',
      '{"jsonrpc":"2.0","method":"notifications/BAD","params":{"level":"info","data":"x"},}\n',
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"BAD","id":77},}\n',
      bytes('{"jsonrpc":"2.0","method":"notifications/BAD","params":{"data":"', [0xff], '"}}\n'),
    ];
    for (const frame of notifications) expect(await exchange(s, frame)).toEqual([]);
    expect((await s.finish()).code).toBe(0);
    expect(s.record().filter((l) => l.includes("BAD"))).toEqual([]);
    expect(s.capture().stop.data.counts.rejected_frames).toBe(notifications.length);
  });

  test("a malformed request is answered at its top-level id, never at an id nested in its params", async () => {
    const s = startWrap();
    await s.initialize();
    const frame = '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"id":5,"text":"BAD"}},"id":6,}\n';
    const replies = await exchange(s, frame);
    expect(replies.map((r) => r.id)).not.toContain(5);
    for (const r of replies) expect(r).toMatchObject({ id: 6, error: { code: -32700 } });
    expect((await s.finish()).code).toBe(0);
  });

  test("tools/call with a missing or non-string params.name is denied E_INVALID_CALL", async () => {
    for (const options of [{}, { policy: { version: 1, tools: { allow: ["*"] } } }]) {
      const s = startWrap(options);
      await s.initialize();
      for (const params of [{}, { name: 42 }, { name: null, arguments: {} }, { arguments: { text: "x" } }]) {
        const response = await s.request("tools/call", params);
        expect(response.result).toMatchObject({ isError: true, structuredContent: { vigil: { decision: "deny", error_code: "E_INVALID_CALL" } } });
      }
      const bare = await s.request("tools/call");
      expect(bare.result).toMatchObject({ isError: true, structuredContent: { vigil: { error_code: "E_INVALID_CALL" } } });
      expect((await s.finish()).code).toBe(0);
      expect(s.recordedCalls()).toEqual([]);
      expect(s.capture().decisions.map((d) => d.data.reason_code)).toEqual(Array(5).fill("E_INVALID_CALL"));
    }
  });
});

describe("message size cap (--max-message-bytes 4096)", () => {
  const CAP = ["--allow-all", "--max-message-bytes", "4096"];

  test("an over-cap client line is not forwarded, its id gets an error, oversized is counted", async () => {
    const s = startWrap({ flags: CAP });
    await s.initialize();
    const text = `BAD${"y".repeat(8000)}`;
    const idFirst = `{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}}}\n`;
    const idLast = `{"method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}},"jsonrpc":"2.0","id":"big-2"}\n`;
    for (const [frame, id] of [[idFirst, "big-1"], [idLast, "big-2"]] as const) {
      const replies = await exchange(s, frame);
      expect(replies).toHaveLength(1);
      expect(replies[0]).toMatchObject({ jsonrpc: "2.0", id, error: {} });
      expect(typeof replies[0].error.code).toBe("number");
    }
    expect(await exchange(s, `{"jsonrpc":"2.0","method":"notifications/BAD","params":{"x":"${text}"}}\n`)).toEqual([]);
    expect((await s.call("echo", { text: "small" })).result).toEqual({ content: [{ type: "text", text: "small" }] });
    expect((await s.finish()).code).toBe(0);
    expect(s.record().filter((l) => l.includes("BAD"))).toEqual([]);
    expect(s.capture().stop.data.counts).toMatchObject({ oversized: 3, rejected_frames: 0 });
  });

  for (const idFirst of [false, true]) {
    test(`an over-cap server response becomes a -32000 error to its id (server id-first=${idFirst})`, async () => {
      const s = startWrap({ flags: CAP, fixture: { FIXTURE_ID_FIRST: idFirst } });
      await s.initialize();
      const big = await s.call("big", { bytes: 10_000 });
      expect(big.result).toBeUndefined();
      expect(big.error).toMatchObject({ code: -32000 });
      expect(big.error!.message).toContain("4096");
      const fits = await s.call("big", { bytes: 100 });
      expect(fits.result).toEqual({ content: [{ type: "text", text: "x".repeat(100) }] });
      expect(s.client.unmatched).toEqual([]);
      expect((await s.finish()).code).toBe(0);
      expect(s.capture().stop.data.counts.oversized).toBe(1);
    });
  }
});

describe("server stdout pollution", () => {
  test("non-JSON server lines are dropped and counted; the client only sees valid responses", async () => {
    const s = startWrap({ fixture: { FIXTURE_GARBAGE: true } });
    await s.initialize();
    for (const text of ["a", "b", "c"]) expect((await s.call("echo", { text })).result).toEqual({ content: [{ type: "text", text }] });
    expect(s.client.unmatched).toEqual([]);
    expect((await s.finish()).code).toBe(0);
    expect(s.capture().stop.data.counts).toMatchObject({ server_garbage_lines: 4, server_messages: 4 });
    expect(s.client.stderrText()).toContain("fixture log: starting");
  });
});

describe("flag validation: exit 2, one line, nothing spawned", () => {
  let tmp: TmpDir;
  beforeEach(() => {
    tmp = tmpDir("vigil-e2e-flags");
  });
  afterEach(() => tmp.cleanup());

  /** Runs `vigil wrap ARGS -- fixture`; the fixture would create its record file if it were spawned. */
  async function refused(args: string[], command?: string[]): Promise<string> {
    const record = tmp.file("record.txt");
    const run = await runVigil(["wrap", ...args, "--", ...(command ?? fixtureArgv({ FIXTURE_RECORD: record }))]);
    expect({ args, code: run.code }).toEqual({ args, code: 2 });
    expect(existsSync(record)).toBe(false);
    expect(run.stdout).toBe("");
    const lines = run.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("vigil: hint:"));
    expect({ args, lines: lines.length }).toEqual({ args, lines: 1 });
    expect(lines[0]).toStartWith("vigil: ");
    return lines[0]!;
  }

  const ES = ["--event-source", EVENT_SOURCE];

  test("policy selection", async () => {
    await refused([]);
    await refused(["--policy", writePolicy(tmp.path, { version: 1, tools: { allow: ["*"] } }), "--allow-all"]);
    const typo = writePolicy(tmp.path, "version: 1\ntools:\n  allow: ['*']\n  hide_denid: true\n", "typo.yaml");
    expect(await refused(["--policy", typo])).toContain("hide_denid");
    expect(await refused(["--policy", writePolicy(tmp.path, { version: 1, tools: { allow: ["*"] }, extra: 1 })])).toContain("extra");
    await refused(["--policy", tmp.file("missing.yaml")]);
  });

  test("event source", async () => {
    await refused(["--allow-all", "--capture-dir", tmp.file("cap")]);
    await refused(["--allow-all", "--decision-log", tmp.file("d.ndjson")]);
    for (const bad of ["not-a-uri", "vigil://a b", "1vigil://x", "vigil:/x"]) {
      await refused(["--allow-all", "--capture-dir", tmp.file("cap"), "--event-source", bad]);
    }
    expect(existsSync(tmp.file("cap"))).toBe(false);
  });

  test("output combinations", async () => {
    const f = (name: string) => tmp.file(name);
    await refused(["--allow-all", ...ES, "--decision-log", f("d"), "--session-stop-out", f("s")]);
    await refused(["--allow-all", ...ES, "--capture-dir", f("cap"), "--session-stop-out", f("s")]);
    await refused(["--allow-all", ...ES, "--capture-dir", f("cap"), "--decision-log", f("d")]);
    await refused(["--allow-all", ...ES, "--session-context-out", f("same"), "--session-stop-out", f("same")]);
    mkdirSync(f("real"));
    symlinkSync(f("real"), f("link"));
    await refused(["--allow-all", ...ES, "--session-context-out", f("real/x"), "--session-stop-out", f("link/x")]);
    await refused(["--allow-all", ...ES, "--receipts-out", f("r"), "--decision-log", f("r"), "--decision-log-new"]);
    for (const name of ["d", "s", "r", "cap", "same", "real/x"]) expect(existsSync(f(name))).toBe(false);
  });

  test("existing files and directories", async () => {
    const f = (name: string) => tmp.file(name);
    writeFileSync(f("old.json"), "earlier evidence\n");
    await refused(["--allow-all", ...ES, "--session-stop-out", f("old.json")]);
    await refused(["--allow-all", ...ES, "--decision-log", f("old.json"), "--decision-log-new"]);
    expect(readFileSync(f("old.json"), "utf8")).toBe("earlier evidence\n");
    mkdirSync(f("full"));
    writeFileSync(f("full/keep"), "x");
    await refused(["--allow-all", ...ES, "--capture-dir", f("full")]);
    expect(readdirSync(f("full"))).toEqual(["keep"]);
    await refused(["--allow-all", ...ES, "--session-stop-out", f("no/such/dir/stop.json")]);
    await refused(["--allow-all", ...ES, "--capture-dir", f("no/such/cap")]);
    expect(existsSync(f("no"))).toBe(false);
  });

  test("unknown flags and bad values", async () => {
    await refused(["--allow-all", "--no-such-flag"]);
    await refused(["--allow-all", "--max-message-bytes", "lots"]);
    await refused(["--allow-all", "--shutdown-grace-ms", "-1"]);
    await refused(["--allow-all", "--on-evidence-failure", "ignore"]);
  });

  test("a command that does not exist: exit 2, no capture dir, no evidence file", async () => {
    const missing = [tmp.file("no-such-server")];
    expect(await refused(["--allow-all", ...ES, "--capture-dir", tmp.file("cap")], missing)).toContain("no-such-server");
    expect(existsSync(tmp.file("cap"))).toBe(false);
    await refused(["--allow-all", ...ES, "--decision-log", tmp.file("d"), "--decision-log-new", "--session-stop-out", tmp.file("s")], missing);
    expect(readdirSync(tmp.path)).toEqual([]);
    writeFileSync(tmp.file("not-executable"), "#!/bin/sh\n", { mode: 0o644 });
    await refused(["--allow-all", ...ES, "--capture-dir", tmp.file("cap")], [tmp.file("not-executable")]);
    expect(existsSync(tmp.file("cap"))).toBe(false);
  });
});
