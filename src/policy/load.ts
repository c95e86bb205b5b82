/**
 * Loading a policy file: bounded read → strict YAML/JSON parse → schema check → compile.
 * Every failure is a VigilError("policy_invalid") (exit 2) with one line:
 * `policy <file>: <path inside it>: <what was expected>`.
 */
import { open, stat } from "node:fs/promises";
import { sha256Hex, canonicalSha256 } from "../shared/digest.ts";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
import { decodeUtf8Strict } from "../shared/strict-json.ts";
import { compilePolicy, type CompiledPolicy } from "./compile.ts";
import { MAX_POLICY_BYTES, policyFormatFor, type PolicyFormat } from "./document-source.ts";
import { parseJsonPolicy } from "./json-document.ts";
import { checkPolicyDocument } from "./schema.ts";
import { parseYamlPolicy } from "./yaml-document.ts";

export interface ParsedPolicy {
  /** Compiled and ready to evaluate. */
  policy: CompiledPolicy;
  /** "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of the document as written (no defaults added). */
  digest: string;
}

export interface LoadedPolicy extends ParsedPolicy {
  path: string;
  /** Hex SHA-256 of the file's raw bytes. */
  file_sha256: string;
}

/** Reads, validates and compiles a policy file. Throws VigilError("policy_invalid"). */
export async function loadPolicyFile(path: string): Promise<LoadedPolicy> {
  const format = policyFormatFor(path);
  if (format === null) {
    throw invalid(path, "unsupported file extension (expected .yaml, .yml or .json)");
  }
  const bytes = await readBounded(path);
  const parsed = parsePolicy(bytes, format, path);
  return { path, ...parsed, file_sha256: sha256Hex(bytes) };
}

/** Parses policy text or bytes of a known format; `sourceName` names it in errors. Throws VigilError("policy_invalid"). */
export function parsePolicy(input: string | Uint8Array, format: PolicyFormat, sourceName: string): ParsedPolicy {
  const bytes = typeof input === "string" ? Buffer.from(input) : input;
  if (bytes.byteLength > MAX_POLICY_BYTES) throw invalid(sourceName, tooLarge(bytes.byteLength));
  const text = typeof input === "string" ? input : decodeUtf8Strict(input);
  if (text === null) throw invalid(sourceName, "not valid UTF-8");
  const source = format === "yaml" ? parseYamlPolicy(text) : parseJsonPolicy(text);
  if (!source.ok) throw invalid(sourceName, source.message);
  const checked = checkPolicyDocument(source.value);
  if (!checked.ok) throw invalid(sourceName, checked.message);
  const compiled = compilePolicy(checked.document);
  if (!compiled.ok) throw invalid(sourceName, compiled.message);
  // Digest of the document as parsed, not as defaulted: YAML and JSON spellings of the same
  // document agree, and the digest changes only when the file's meaning as written changes.
  return { policy: compiled.policy, digest: `sha256:${canonicalSha256(source.value)}` };
}

/** Reads at most MAX_POLICY_BYTES + 1 bytes, so a file that grows after stat is still refused, not buffered. */
async function readBounded(path: string): Promise<Uint8Array> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw invalid(path, "not a regular file");
    if (info.size > MAX_POLICY_BYTES) throw invalid(path, tooLarge(info.size));
    handle = await open(path, "r");
    const buffer = new Uint8Array(MAX_POLICY_BYTES + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled > MAX_POLICY_BYTES) throw invalid(path, tooLarge(filled));
    return buffer.subarray(0, filled);
  } catch (e) {
    if (e instanceof VigilError) throw e;
    const code = errnoCode(e);
    const why = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : errorMessage(e);
    throw invalid(path, `cannot read: ${why}`);
  } finally {
    await handle?.close();
  }
}

function tooLarge(size: number): string {
  return `file is ${size} bytes, larger than the ${MAX_POLICY_BYTES}-byte limit`;
}

function invalid(source: string, message: string): VigilError {
  return new VigilError("policy_invalid", `policy ${source}: ${message}`);
}
