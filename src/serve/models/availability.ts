/**
 * Whether a failed model call means "the model is unavailable" (serve.md §5 "Outages are not
 * attempts"), pure. An unavailable model is no fault of the batch it was given: the run ends with
 * run_end code `model_unavailable`, the events session backs off and injects the batch again, and
 * the failure is not counted toward the 3 attempts before `dropped`.
 *
 * Unavailable (the model never accepted the request):
 * - `connect` (refused, reset, DNS, a response cut off) and `timeout` (the request's deadline);
 * - `http` 408, 429 and 5xx — the HTTP client has already retried them (models/openai.ts);
 * - `spawn`: the `command` model could not be started (missing binary, EMFILE, …);
 * - `exit` with status 75 (EX_TEMPFAIL of sysexits.h): the `command` model's way to say "try
 *   again later" (for example a wrapper whose own upstream is down).
 * Everything else counts as an attempt: another 4xx (the request itself was refused), a response
 * we refuse (`protocol`), any other exit status — and any failure once the model had answered a
 * turn of the same run (it accepted the batch; a later failure is the run's, serve.md §5).
 */
import { MODEL_UNAVAILABLE } from "../../events/ports.ts";
import { ModelError } from "./types.ts";

export { MODEL_UNAVAILABLE };

/** The exit status with which a `command` model says it is temporarily unavailable (EX_TEMPFAIL). */
export const COMMAND_TEMPFAIL_EXIT = 75;

/** HTTP statuses that mean the server did not take the request on (besides every 5xx). */
const UNAVAILABLE_STATUSES: ReadonlySet<number> = new Set([408, 429]);

/** An HTTP status the model server answers when it is unavailable, not when the request is bad. */
export function isUnavailableStatus(status: number): boolean {
  return UNAVAILABLE_STATUSES.has(status) || (status >= 500 && status <= 599);
}

/** Whether `error` (what a model turn rejected with) is an outage rather than a fault of the request. */
export function isModelUnavailable(error: unknown): boolean {
  if (!(error instanceof ModelError)) return false;
  switch (error.kind) {
    case "connect":
    case "timeout":
    case "spawn":
      return true;
    case "http":
      return error.status !== undefined && isUnavailableStatus(error.status);
    case "exit":
      return error.exitCode === COMMAND_TEMPFAIL_EXIT;
    default:
      return false;
  }
}

/**
 * The run_end code for a run that failed with `error`: `model_unavailable` when the model was
 * unavailable and had not answered any turn of this run (`answeredTurns` 0), else undefined.
 */
export function unavailableRunCode(error: unknown, answeredTurns: number): typeof MODEL_UNAVAILABLE | undefined {
  return answeredTurns === 0 && isModelUnavailable(error) ? MODEL_UNAVAILABLE : undefined;
}
