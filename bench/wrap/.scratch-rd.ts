import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EvidenceLog } from "../../src/evidence/evidence-log.ts";
import { decisionEvent } from "../../src/evidence/records.ts";
import { canonicalSha256 } from "../../src/shared/digest.ts";
const dir = mkdtempSync(join(tmpdir(), process.argv[2] === "shm" ? "x" : "rd-"));
const log = EvidenceLog.createNew(join(process.argv[2] === "shm" ? "/dev/shm" : dir, `d-${process.pid}.ndjson`));
let seq = 0;
const rec = () => JSON.stringify(decisionEvent("vigil://bench/x", { session_id: "0123456789abcdef0123456789abcdef", seq: seq++, server_id: "bench", request_id: seq, tool: "echo", decision: "allow", reason_code: "no_policy", reason: "no policy: observe only (--allow-all)", matched_rule: null, policy_digest: null, arguments_sha256: canonicalSha256({ text: "hello" }), dry_run: false }));
console.log("line bytes", rec().length);
for (let b = 0; b < 6; b++) {
  let tStr = 0, tApp = 0;
  for (let i = 0; i < 20000; i++) {
    const t0 = performance.now();
    const line = rec();
    const t1 = performance.now();
    log.append(line);
    const t2 = performance.now();
    tStr += t1 - t0; tApp += t2 - t1;
  }
  console.log(`record ${(tStr * 50).toFixed(2)} µs  append ${(tApp * 50).toFixed(2)} µs`);
}
