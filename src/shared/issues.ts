/**
 * Config problems as text: one line per problem, `<path>: <what was expected>`, for example
 * `mcp_servers[1].events[0].delivery: expected "poll" | "push" | "webhook"`.
 *
 * Not `v.summarize`: its paths are dotted indices (`mcp_servers.1.events.0`) over two lines, and
 * valibot's default messages end in "but received <value>", which could print a secret. Here the
 * value is never printed, and a known secret is scrubbed from the finished text as a last guard
 * (shared/scrub.ts: the one scrubber, and its minimum-length rule).
 */
import type * as v from "valibot";
import { VigilError } from "./errors.ts";
import { formatDocumentPath, type PathSegment } from "./document-path.ts";
import { Scrubber, scrubText } from "./scrub.ts";

/** Problems shown in one error; the rest are counted. */
export const MAX_REPORTED_PROBLEMS = 20;

/** `model.base_url`, `mcp_servers[0].headers.Authorization`, `headers["x y"]`. */
export function formatPath(segments: readonly PathSegment[]): string {
  return formatDocumentPath(segments);
}

/** One line for one valibot issue; never includes the refused value. */
export function formatIssue(issue: v.BaseIssue<unknown>): string {
  const segments = (issue.path ?? []).map((item) => item.key as PathSegment);
  const path = formatPath(segments);
  let what: string;
  if (issue.type === "strict_object" && issue.expected === "never") what = "unknown key";
  else if (issue.type === "strict_object" && issue.input === undefined && segments.length > 0) what = "required key is missing";
  else what = stripReceived(issue.message);
  return path === "" ? what : `${path}: ${what}`;
}

// Our schema messages never contain this; valibot's defaults do, followed by the value.
function stripReceived(message: string): string {
  const cut = message.indexOf(" but received");
  return cut < 0 ? message : message.slice(0, cut);
}

/**
 * A config_invalid error (exit 2): `config <source>: <problem>`, one line per problem. `secrets`
 * are the ones this config holds (not registered yet while it is being refused); the registered
 * ones are scrubbed too.
 */
export function configError(source: string, problems: readonly string[], secrets: Iterable<string> = [], hint?: string): VigilError {
  // A value failing two checks of one pipe (0.5 for an integer from 1 to 64: not an integer, under
  // the minimum) gives the same line twice: each problem is said once.
  const distinct = [...new Set(problems)];
  const shown = distinct.slice(0, MAX_REPORTED_PROBLEMS).map((p) => `config ${source}: ${p}`);
  const hidden = distinct.length - shown.length;
  if (hidden > 0) shown.push(`config ${source}: (and ${hidden} more problem${hidden === 1 ? "" : "s"})`);
  return new VigilError("config_invalid", scrubText(new Scrubber(secrets).text(shown.join("\n"))), hint === undefined ? {} : { hint });
}
