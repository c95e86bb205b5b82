/**
 * Strict YAML for policy files: one document, YAML 1.2 core schema, and only what JSON can say.
 *
 * Refused, each with the path where it occurs: duplicate keys, keys that are not strings (`1:` and
 * `"1":` would otherwise collapse into one key), anchors and aliases, tags, `%YAML` directives (a
 * 1.1 directive would turn `yes` into true and re-enable `<<` merges), non-finite numbers (`.inf`,
 * `1e400`), and nesting deeper than the JSON limit. The result is a plain JSON value, so a YAML
 * policy and its JSON equivalent have the same digest.
 */
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, type Node } from "yaml";
import { MAX_POLICY_DEPTH, type SourceParse } from "./document-source.ts";
import { formatDocumentPath, type PathSegment } from "../shared/document-path.ts";

export function parseYamlPolicy(text: string): SourceParse {
  const lines = new LineCounter();
  const doc = parseDocument(text, {
    version: "1.2",
    schema: "core",
    merge: false,
    uniqueKeys: true, // our walk below reports duplicates with their path; this is the backstop
    lineCounter: lines,
    // "error", not "silent": silent also stops errors being collected (a second document would
    // pass unnoticed). Warnings are not printed at this level; we refuse them below anyway.
    logLevel: "error",
    prettyErrors: false,
  });
  const at = (offset: number | undefined) => {
    if (offset === undefined) return "";
    const { line, col } = lines.linePos(offset);
    return ` (line ${line}, column ${col})`;
  };
  // Structural refusals first: they name a path, which is more useful than a parser offset.
  const refusal = doc.contents ? walk(doc.contents, [], 0) : null;
  if (refusal) return { ok: false, message: `${refusal.what}${at(refusal.offset)}` };
  const error = doc.errors[0];
  if (error) {
    const head =
      error.code === "MULTIPLE_DOCS"
        ? "a policy file holds exactly one YAML document"
        : error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
    return { ok: false, message: `${head}${at(error.pos[0])}` };
  }
  if (doc.directives.yaml.explicit) return { ok: false, message: "%YAML directives are not allowed" };
  const warning = doc.warnings[0];
  if (warning) return { ok: false, message: `${warning.message.split("\n")[0]}${at(warning.pos[0])}` };
  return { ok: true, value: doc.toJS({ maxAliasCount: 0 }) };
}

interface Refusal {
  what: string;
  offset: number | undefined;
}

function refuse(path: PathSegment[], what: string, node: Node | unknown): Refusal {
  const where = formatDocumentPath(path);
  const range = (node as { range?: [number, number, number] | null }).range;
  return { what: where === "" ? what : `${where}: ${what}`, offset: range?.[0] };
}

/** Depth-first check of the node tree; returns the first refusal. Recursion is bounded by MAX_POLICY_DEPTH. */
function walk(node: unknown, path: PathSegment[], depth: number): Refusal | null {
  if (node === null || node === undefined) return null; // `? key` with no value: null, which the schema judges
  if (isAlias(node)) return refuse(path, "YAML aliases are not allowed", node);
  const n = node as Node;
  if (n.anchor) return refuse(path, "YAML anchors are not allowed", node);
  if (n.tag) return refuse(path, "YAML tags are not allowed", node);
  if (isScalar(node)) {
    if (typeof node.value === "number" && !Number.isFinite(node.value)) {
      return refuse(path, "numbers must be finite", node);
    }
    return null;
  }
  if (isMap(node) || isSeq(node)) {
    if (depth >= MAX_POLICY_DEPTH) return refuse(path, `nesting deeper than ${MAX_POLICY_DEPTH} levels`, node);
  }
  if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const refusal = walk(node.items[i], [...path, i], depth + 1);
      if (refusal) return refusal;
    }
    return null;
  }
  if (isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      const key = pair.key;
      if (isAlias(key)) return refuse(path, "YAML aliases are not allowed", key);
      if (!isScalar(key) || typeof key.value !== "string") {
        const shown = isScalar(key) ? String(key.value) : "a collection";
        return refuse(path, `keys must be strings, got ${shown} (quote it)`, key ?? node);
      }
      if (key.anchor || key.tag) return refuse([...path, key.value], "YAML anchors and tags are not allowed", key);
      if (seen.has(key.value)) return refuse([...path, key.value], "duplicate key", key);
      seen.add(key.value);
      const refusal = walk(pair.value, [...path, key.value], depth + 1);
      if (refusal) return refusal;
    }
    return null;
  }
  return null;
}
