/**
 * The run a session has in flight (session.ts): its prompt, the steers it took, its frames' state,
 * and what its runner is given — the request and the sink its frames go to.
 */
import type { FrameBody } from "../protocol/frames.ts";
import type { TranscriptRecord } from "../state/transcript.ts";
import { errorMessage } from "../../shared/errors.ts";
import type { HistoryFold } from "./history.ts";
import { type PendingItem, userMessages } from "./queues.ts";
import { FrameNotStoredError } from "./session-support.ts";
import type { RunRequest } from "./types.ts";

export interface ActiveRun {
  id: string;
  controller: AbortController;
  prompt: PendingItem[];
  taken: PendingItem[];
  /** Emits from the runner are stored while true. */
  accepting: boolean;
  sawStart: boolean;
  /** The runner's own run_end, held until the session is idle again (see `finish`). */
  end: FrameBody | null;
  done: Promise<void>;
}

export function newActiveRun(id: string, prompt: PendingItem[]): ActiveRun {
  return {
    id,
    controller: new AbortController(),
    prompt,
    taken: [],
    accepting: true,
    sawStart: false,
    end: null,
    done: Promise.resolve(),
  };
}

export interface RunRequestParts {
  history: HistoryFold;
  /** The transcript's last seq now, before the run's first frame. */
  historySeq: number;
  /** The steers waiting now (empty once the run is no longer the session's). */
  steers(): PendingItem[];
  steersReceived(count: number): void;
}

/** The runner's request: the history as of now, the run's prompt, and its hand on the steer line. */
export function runRequest(run: ActiveRun, trigger: string, parts: RunRequestParts): RunRequest {
  return {
    runId: run.id,
    trigger,
    history: parts.history.messages(),
    blocks: [...parts.history.blocks],
    historySeq: parts.historySeq,
    prompt: userMessages(run.prompt),
    takeSteers: () => {
      if (!run.accepting) return [];
      const taken = parts.steers();
      run.taken.push(...taken);
      return userMessages(taken);
    },
    steersReceived: (count) => parts.steersReceived(count),
  };
}

/**
 * Where the run's frames go: stored (`store`), except its run_end, which is held until the session
 * is idle again. A frame that cannot be stored fails the run there: it never goes on past a frame
 * no client saw. Nothing is taken once the run stopped accepting.
 */
export function runFrameSink(run: ActiveRun, store: (frame: FrameBody) => TranscriptRecord | null, lastError: () => unknown): (frame: FrameBody) => void {
  return (frame) => {
    if (!run.accepting) return;
    if (frame.type === "run_start") run.sawStart = true;
    if (frame.type === "run_end") run.end = frame;
    else if (store(frame) === null) throw new FrameNotStoredError(frame.type, errorMessage(lastError()));
  };
}
