/**
 * Per-tool argument schemas: JSON Schema draft 2020-12, compiled with Ajv when the policy loads
 * (a schema that does not compile is a load error, never a per-call surprise).
 *
 * One Ajv instance serves a whole policy (an instance costs ~20 ms to build), but its schema
 * registry is emptied after each tool: schemas cannot reference one another by `$id`, so compile
 * results never depend on tool order, and two tools may reuse an `$id`. No remote `$ref` is ever
 * fetched (there is no loader). Strict mode is on: an unknown keyword or `properties` without
 * `type: object` is a typo we refuse. Union types (`type: [string, "null"]`) are ordinary JSON
 * Schema and allowed.
 */
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";

export interface Violation {
  /** JSON pointer into `params.arguments` ("" = the arguments object itself). */
  path: string;
  /** Ajv's keyword message, built from schema-side parameters only: never from the data. */
  message: string;
}

export type ArgumentValidator = ValidateFunction;

export type SchemaCompile = { ok: true; validate: ArgumentValidator } | { ok: false; message: string };

/** At most this many violations are reported per call (allErrors over a large array can yield thousands). */
export const MAX_VIOLATIONS = 20;

export type ArgumentSchemaCompiler = (schema: Record<string, unknown>) => SchemaCompile;

/** A compiler for the argument schemas of one policy. */
export function createArgumentSchemaCompiler(): ArgumentSchemaCompiler {
  // coerceTypes/useDefaults/removeAdditional stay off: validation must never modify the arguments
  // we forward byte-for-byte. verbose stays off: errors must not carry the data.
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true, verbose: false });
  addFormats(ajv);
  return (schema) => {
    try {
      return { ok: true, validate: ajv.compile(schema) };
    } catch (e) {
      const message = (e instanceof Error ? e.message : String(e)).split("\n")[0]!;
      return { ok: false, message };
    } finally {
      ajv.removeSchema(); // compiled validators keep working; the registry starts empty for the next tool
    }
  };
}

/** Validates arguments; returns [] when they conform. Messages never contain argument values. */
export function argumentViolations(validate: ArgumentValidator, args: unknown): Violation[] {
  if (validate(args)) return [];
  return toViolations(validate.errors ?? []);
}

function toViolations(errors: readonly ErrorObject[]): Violation[] {
  const out: Violation[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    // Ajv's default messages interpolate only schema-side params (pattern, limit, format, type…);
    // fields that hold data (params.additionalProperty, propertyName, data) are never copied.
    const violation = { path: error.instancePath, message: error.message ?? `must pass "${error.keyword}"` };
    const key = `${violation.path}\u0000${violation.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(violation);
    if (out.length >= MAX_VIOLATIONS) break;
  }
  return out;
}
