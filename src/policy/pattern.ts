/**
 * Tool-name patterns of a policy (`tools.allow`, `tools.deny`).
 *
 * `*` alone matches every name; otherwise each `*` matches any run of characters (possibly empty)
 * anywhere in the pattern, so `read_*_file` works (Assay treats an interior `*` as a literal, which
 * silently blocks nothing in a deny list). Every other character is literal: there is no regex, so a
 * pattern such as `a.b` or `(x)` cannot inject one, and matching cannot backtrack catastrophically.
 * The match is on the full tool name.
 */

/** A precompiled pattern: the literal pieces between `*`s. */
export interface ToolNamePattern {
  readonly source: string;
  readonly matches: (name: string) => boolean;
}

export function compilePattern(source: string): ToolNamePattern {
  const pieces = source.split("*");
  if (pieces.length === 1) return { source, matches: (name) => name === source };
  // pieces.length >= 2: the first piece is a prefix, the last a suffix, the rest must appear in
  // order between them. Taking each middle piece at its leftmost occurrence is optimal for
  // `*`-only globs: it leaves the most room for the pieces after it.
  const prefix = pieces[0]!;
  const suffix = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1).filter((p) => p.length > 0);
  const minLength = prefix.length + suffix.length;
  return {
    source,
    matches(name) {
      if (name.length < minLength || !name.startsWith(prefix) || !name.endsWith(suffix)) return false;
      let from = prefix.length;
      const end = name.length - suffix.length;
      for (const piece of middle) {
        const at = name.indexOf(piece, from);
        if (at < 0 || at + piece.length > end) return false;
        from = at + piece.length;
      }
      return true;
    },
  };
}

/** Index of the first pattern that matches `name`, or -1. */
export function firstMatch(patterns: readonly ToolNamePattern[], name: string): number {
  for (let i = 0; i < patterns.length; i++) if (patterns[i]!.matches(name)) return i;
  return -1;
}
