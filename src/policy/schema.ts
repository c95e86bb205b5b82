/**
 * The policy document (wrap.md §4.1) as a valibot schema: the single definition of its shape.
 * Every mapping is strict, because a typo in a security policy must not silently disable a rule.
 * Schema messages are the "expected …" half of an error; formatIssue adds the path and "got …".
 */
import * as v from "valibot";
import { describeValue, formatDocumentPath, type PathSegment } from "../shared/document-path.ts";
import { isRecord } from "../shared/guards.ts";


// valibot's record() silently skips these keys; refuse them so no pin or schema is dropped unseen.
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** A mapping keyed by tool name, with reserved keys refused before record() could drop them. */
function toolMap<T extends v.GenericSchema>(value: T) {
  return v.pipe(
    v.custom<Record<string, unknown>>(isRecord, "expected a mapping of tool names"),
    v.rawCheck<Record<string, unknown>>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      for (const key of Object.keys(dataset.value)) {
        if (!RESERVED_KEYS.has(key)) continue;
        const input = dataset.value;
        addIssue({
          message: "this tool name is not supported as a policy key",
          path: [{ type: "object", origin: "key", input, key, value: input[key] }],
        });
      }
    }),
    v.record(v.string(), value),
  );
}

const POSITIVE_INTEGER = "expected a positive integer";
const POSITIVE_NUMBER = "expected a positive number";

const PositiveInteger = v.pipe(
  v.number(POSITIVE_INTEGER),
  v.safeInteger(POSITIVE_INTEGER),
  v.minValue(1, POSITIVE_INTEGER),
);
const PositiveNumber = v.pipe(v.number(POSITIVE_NUMBER), v.finite(POSITIVE_NUMBER), v.gtValue(0, POSITIVE_NUMBER));

const PatternList = v.array(
  v.pipe(v.string("expected a tool name pattern (a string)"), v.minLength(1, "expected a non-empty pattern")),
  "expected a list of tool name patterns",
);

/** A strict mapping. valibot's strictObject accepts an array as an object, so arrays are refused first. */
function mapping<T extends v.ObjectEntries>(entries: T, expected = "expected a mapping") {
  const strict = v.strictObject(entries, expected);
  return { strict, schema: v.pipe(v.custom<unknown>(isRecord, expected), strict) };
}

const Tools = mapping({
  allow: v.optional(PatternList),
  deny: v.optional(PatternList),
  hide_denied: v.optional(v.boolean("expected true or false"), false),
});

const Rate = mapping({ calls: PositiveInteger, per_seconds: PositiveNumber });

const Limits = mapping({ max_tool_calls: v.optional(PositiveInteger), rate: v.optional(Rate.schema) });

/** A JSON Schema (draft 2020-12) for one tool's `params.arguments`; Ajv checks the rest at compile time. */
const ArgumentSchema = v.custom<Record<string, unknown>>(isRecord, "expected a JSON Schema object");

const PIN = 'expected "sha256:" followed by 64 lowercase hex digits';
const Pin = v.pipe(v.string(PIN), v.regex(/^sha256:[0-9a-f]{64}$/, PIN));

export const UNCONSTRAINED_MODES = ["allow", "warn", "deny"] as const;

const Policy = mapping(
  {
    version: v.literal(1, "expected 1"),
    // Optional: a policy may govern only arguments, limits or pins; no tools section = no name rules.
    tools: v.optional(Tools.schema, { hide_denied: false }),
    arguments: v.optional(toolMap(ArgumentSchema), {}),
    unconstrained: v.optional(v.picklist(UNCONSTRAINED_MODES, 'expected "allow", "warn" or "deny"'), "allow"),
    limits: v.optional(Limits.schema, {}),
    pins: v.optional(toolMap(Pin), {}),
  },
  "expected a mapping at the top level",
);

export const PolicySchema = Policy.schema;

export type PolicyDocument = v.InferOutput<typeof PolicySchema>;
export type UnconstrainedMode = PolicyDocument["unconstrained"];

/** Keys each strict mapping accepts, for "unknown key" messages. */
const KNOWN_KEYS: Record<string, readonly string[]> = {
  "": Object.keys(Policy.strict.entries),
  tools: Object.keys(Tools.strict.entries),
  limits: Object.keys(Limits.strict.entries),
  "limits.rate": Object.keys(Rate.strict.entries),
};

export type DocumentCheck = { ok: true; document: PolicyDocument } | { ok: false; message: string };

/** Validates a parsed document; on failure, one line naming the path and what was expected. */
export function checkPolicyDocument(value: unknown): DocumentCheck {
  const result = v.safeParse(PolicySchema, value);
  if (result.success) return { ok: true, document: result.output };
  const [first, ...rest] = result.issues;
  const more = rest.length === 0 ? "" : ` (and ${rest.length} more problem${rest.length === 1 ? "" : "s"})`;
  return { ok: false, message: `${formatIssue(first)}${more}` };
}

function formatIssue(issue: v.BaseIssue<unknown>): string {
  const segments: PathSegment[] = (issue.path ?? []).map((item) => item.key as PathSegment);
  const at = formatDocumentPath(segments);
  const prefix = at === "" ? "" : `${at}: `;
  if (issue.type === "strict_object" && issue.expected === "never") {
    const known = KNOWN_KEYS[formatDocumentPath(segments.slice(0, -1))];
    return `${prefix}unknown key${known ? ` (expected one of: ${known.join(", ")})` : ""}`;
  }
  if (issue.type === "strict_object" && issue.input === undefined && segments.length > 0) {
    return `${prefix}required key is missing`;
  }
  if (issue.type === "raw_check") return `${prefix}${issue.message}`;
  return `${prefix}${issue.message}, got ${describeValue(issue.input)}`;
}
