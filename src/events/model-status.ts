/**
 * The frames that tell clients the model is unavailable and back (serve.md §5 "Outages are not
 * attempts"), sent by the events client of the session that backs off:
 *
 *   model_unavailable {error, retry_in_ms}   a run found the model unavailable; the next batch goes
 *                                            in after retry_in_ms (repeated for every such run)
 *   model_available {}                       the first run after an outage that the model answered
 *
 * The builders leave `seq` out: the session numbers every frame when it emits it.
 */

export interface ModelUnavailableFrame {
  type: "model_unavailable";
  /** The failed run's error (names the status or the connect failure; scrubbed where it arose). */
  error: string;
  /** How long the session waits before the next batch. */
  retry_in_ms: number;
}

export interface ModelAvailableFrame {
  type: "model_available";
}

export type ModelStatusFrame = ModelUnavailableFrame | ModelAvailableFrame;

export function modelUnavailableFrame(error: string, retryInMs: number): ModelUnavailableFrame {
  return { type: "model_unavailable", error, retry_in_ms: retryInMs };
}

export function modelAvailableFrame(): ModelAvailableFrame {
  return { type: "model_available" };
}
