#!/usr/bin/env bun
/**
 * The layer gate (../shared/spec/README.md, Architecture): every relative import of every
 * `.ts` file under the root must go from a part to a part its rules allow, no file may be part of
 * an import circle, and no file may be longer than the size limit. The rules live in one
 * declarative file (scripts/layers.json) so that changing the architecture is a reviewed diff.
 *
 *   bun scripts/check-layers.ts [--rules FILE] [--root DIR]
 *
 * Prints one line per violation (`FILE:LINE imports TARGET (rule)`, `circle: A -> B -> A`,
 * `FILE: N lines (limit L)`) and exits 1 on any; exits 0 and prints a one-line summary otherwise;
 * exits 2 when the rules file itself is unusable.
 *
 * Imports are read with TypeScript's own pre-processor (static `import`, `import type`,
 * `export … from`, dynamic `import("…")`), not with a regex, so comments and strings that merely
 * look like imports are not counted and none that the compiler sees is missed.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import * as v from "valibot";

const Rules = v.strictObject({
  $comment: v.optional(v.string()),
  root: v.string(),
  maxLines: v.pipe(v.number(), v.integer(), v.minValue(1)),
  parts: v.pipe(
    v.array(v.strictObject({ name: v.string(), files: v.array(v.string()), mayImport: v.array(v.string()) })),
    v.minLength(1),
  ),
});
type Rules = v.InferOutput<typeof Rules>;

export interface Violation {
  kind: "layer" | "circle" | "size" | "unassigned" | "unresolved";
  line: string;
}

interface Edge {
  from: string;
  to: string;
  line: number;
}

/** `dir/**` matches everything below dir; any other pattern is one exact path. */
function matches(pattern: string, file: string): boolean {
  if (pattern.endsWith("/**")) return file.startsWith(pattern.slice(0, -2));
  return file === pattern;
}

function partOf(rules: Rules, file: string): Rules["parts"][number] | undefined {
  return rules.parts.find((p) => p.files.some((pattern) => matches(pattern, file)));
}

function listTs(root: string, dir = root): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...listTs(root, full));
    else if (name.endsWith(".ts")) out.push(relative(root, full).split(sep).join("/"));
  }
  return out;
}

function importsOf(root: string, file: string, text: string): Edge[] {
  const info = ts.preProcessFile(text, true, true);
  const edges: Edge[] = [];
  for (const ref of info.importedFiles) {
    if (!ref.fileName.startsWith(".")) continue; // a package: not a layer question
    const to = relative(root, resolve(root, dirname(file), ref.fileName)).split(sep).join("/");
    const line = text.slice(0, ref.pos).split("\n").length;
    edges.push({ from: file, to, line });
  }
  return edges;
}

/** Strongly connected components (Tarjan), each reported as one concrete cycle through it. */
function circles(files: readonly string[], edges: readonly Edge[]): Array<{ cycle: string[]; members: string[] }> {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) if (next.has(e.to)) next.get(e.from)!.push(e.to);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: Array<{ cycle: string[]; members: string[] }> = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node)!) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    const selfLoop = next.get(node)!.includes(node);
    if (component.length > 1 || selfLoop) found.push({ cycle: cycleWithin(new Set(component), next, node), members: component.sort() });
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return found;
}

/** A shortest path from start back to start that stays inside the component (breadth first). */
function cycleWithin(component: Set<string>, next: Map<string, string[]>, start: string): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of next.get(node)!) {
      if (!component.has(to)) continue;
      if (to === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

export function checkLayers(rules: Rules, root: string): Violation[] {
  const files = listTs(root);
  const known = new Set(files);
  const violations: Violation[] = [];
  const edges: Edge[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8");
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    if (lines > rules.maxLines) {
      violations.push({ kind: "size", line: `${rules.root}/${file}: ${lines} lines (limit ${rules.maxLines})` });
    }
    const part = partOf(rules, file);
    if (!part) violations.push({ kind: "unassigned", line: `${rules.root}/${file}: in no part of the layer rules` });
    for (const edge of importsOf(root, file, text)) {
      edges.push(edge);
      const where = `${rules.root}/${file}:${edge.line}`;
      if (!known.has(edge.to)) {
        violations.push({ kind: "unresolved", line: `${where} imports ${edge.to} (not a .ts file under ${rules.root}/)` });
        continue;
      }
      const target = partOf(rules, edge.to);
      if (part && target && !part.mayImport.includes(target.name)) {
        const allowed = part.mayImport.join(", ");
        violations.push({
          kind: "layer",
          line: `${where} imports ${rules.root}/${edge.to} (${part.name} may import only ${allowed}; not ${target.name})`,
        });
      }
    }
  }
  for (const { cycle, members } of circles(files, edges)) {
    const path = cycle.map((f) => `${rules.root}/${f}`).join(" -> ");
    // A knot of more than the one cycle shown: name every file in it, so none is missed.
    const knot = members.length > cycle.length - 1 ? ` (one of the cycles among ${members.join(", ")})` : "";
    violations.push({ kind: "circle", line: `circle: ${path}${knot}` });
  }
  return violations;
}

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

if (import.meta.main) {
  const rulesPath = resolve(flag("--rules") ?? join(import.meta.dir, "layers.json"));
  let rules: Rules;
  try {
    rules = v.parse(Rules, JSON.parse(readFileSync(rulesPath, "utf8")));
  } catch (e) {
    process.stderr.write(`check-layers: ${rulesPath}: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  }
  const root = resolve(flag("--root") ?? join(dirname(rulesPath), "..", rules.root));
  const violations = checkLayers(rules, root);
  for (const violation of violations) process.stdout.write(`${violation.line}\n`);
  if (violations.length > 0) {
    process.stderr.write(`check-layers: ${violations.length} violation(s) of ${relative(process.cwd(), rulesPath)}\n`);
    process.exit(1);
  }
  process.stdout.write(`check-layers: ${listTs(root).length} files, no violation of ${relative(process.cwd(), rulesPath)}\n`);
}
