/** The run a session has in flight (session.ts): its prompt, the steers it took, its frames' state. */
import type { FrameBody } from "../protocol/frames.ts";
import type { PendingItem } from "./queues.ts";

export interface ActiveRun {
  id: string;
  controller: AbortController;
  prompt: PendingItem[];
  taken: PendingItem[];
  /** Emits from the runner are stored while true. */
  accepting: boolean;
  sawStart: boolean;
  /** The seq of its stored run_start (0 until stored): the start of its history block. */
  startSeq: number;
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
    startSeq: 0,
    end: null,
    done: Promise.resolve(),
  };
}
