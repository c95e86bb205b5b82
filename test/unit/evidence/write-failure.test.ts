/**
 * Evidence writes that fail (issue 11 item 11): the error text names the errno once with the path,
 * and a device that fills mid-line (the fault seam: a short write, then ENOSPC) reports ENOSPC — the
 * bytes before it stay, the accounting covers only complete lines.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { EvidenceLog } from "../../../src/evidence/evidence-log.ts";
import { writeRecordFile } from "../../../src/evidence/record-file.ts";
import { writeErrorText } from "../../../src/evidence/write-error.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const systemError = (code: string, message: string, syscall?: string) => Object.assign(new Error(message), { code, ...(syscall ? { syscall } : {}) });

test("writeErrorText: the code once, the description, the path; the call's suffix is dropped", () => {
  expect(writeErrorText(systemError("ENOSPC", "ENOSPC: no space left on device, write", "write"), "/x/d.ndjson")).toBe("ENOSPC: no space left on device (/x/d.ndjson)");
  expect(writeErrorText(systemError("EEXIST", "EEXIST: file already exists, open '/x/c.json'", "open"), "/x/c.json")).toBe("EEXIST: file already exists (/x/c.json)");
  expect(writeErrorText(new Error("something else"), "/x")).toBe("something else (/x)");
  expect(writeErrorText(systemError("EIO", "input/output error"), "/x")).toBe("EIO: input/output error (/x)");
});

test("a device that fills mid-line: the partial tail stays, ENOSPC is reported, later records are dropped", () => {
  using tmp = tmpDir("vigil-unit-evidence");
  const path = tmp.file("d.ndjson");
  const log = EvidenceLog.createNew(path, { failAfterBytes: 25 });
  expect(log.append("a".repeat(9))).toBe(true); // 10 bytes
  expect(log.append("b".repeat(9))).toBe(true); // 20 bytes
  expect(log.append("c".repeat(9))).toBe(false); // 5 bytes fit, then the device is full
  expect(log.append("d")).toBe(false);
  log.close();
  expect(log.failure).toBe(`ENOSPC: no space left on device (${path})`);
  expect({ written: log.written, dropped: log.dropped, bytes: log.bytesWritten }).toEqual({ written: 2, dropped: 2, bytes: 20 });
  expect(readFileSync(path, "utf8")).toBe(`${"a".repeat(9)}\n${"b".repeat(9)}\nccccc`);
});

test("a record file that exists already is never overwritten; the error names EEXIST once", () => {
  using tmp = tmpDir("vigil-unit-evidence");
  const path = tmp.file("stop.json");
  writeRecordFile(path, { a: 1 });
  expect(() => writeRecordFile(path, { a: 2 })).toThrow(`EEXIST: file already exists (${path})`);
  expect(readFileSync(path, "utf8")).toBe('{"a":1}\n');
});
