// scratch (removed after use)
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FileSink } from "bun";
import { relayClientFrames } from "../../src/wrap/client-relay.ts";
import { ClientWriter } from "../../src/wrap/client-writer.ts";
import { LineSplitter } from "../../src/wrap/line-splitter.ts";
import type { WrapOptions } from "../../src/wrap/options.ts";
import { openPolicyGate } from "../../src/wrap/policy-gate.ts";
import { ProxyState } from "../../src/wrap/proxy-state.ts";
import { relayServerFrames } from "../../src/wrap/server-relay.ts";
import { SessionEvidence } from "../../src/wrap/session-evidence.ts";
const fake = { write: (b: Uint8Array) => b.length, flush: () => 0, end: () => 0 } as unknown as FileSink;
const enc = new TextEncoder();
const dir = mkdtempSync(join(tmpdir(), "rt-"));
const log = process.argv[2] === "log";
const gate = await openPolicyGate({ policyPath: null, dryRun: false } as WrapOptions);
const evidence = new SessionEvidence({ captureDir: null, decisionLog: log ? { path: join(dir, "d.ndjson"), mode: "new" } : null, receipts: null, context: null, stop: null, serverStderr: null, manifest: null },
  { eventSource: "vigil://x/y", serverId: "b", serverPid: 1, commandSha256: "0", policyDigest: null, dryRun: false, decisionLogFsync: false, decisionLogFaultBytes: undefined });
evidence.openLogs();
const state = new ProxyState(evidence, gate, new ClientWriter(fake), fake, 1 << 25, "deny");
const sp = new LineSplitter(1 << 25);
let id = 1;
for (let b = 0; b < 6; b++) {
  const t0 = performance.now();
  for (let i = 0; i < 20000; i++) {
    const n = id++;
    await relayClientFrames(state, sp.push(enc.encode(`{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, bench"}}}\n`)));
    await relayServerFrames(state, sp.push(enc.encode(`{"result":{"content":[{"type":"text","text":"hello, bench"}]},"jsonrpc":"2.0","id":${n}}\n`)));
  }
  console.log(log ? "log" : "nolog", ((performance.now() - t0) * 1000 / 20000).toFixed(2), "µs/round trip");
}
