/** The refusal a unit test expects: the VigilError `run` throws; no throw, or another error, fails the test. */
import { VigilError } from "../../src/shared/errors.ts";

export function refusalOf(run: () => unknown): VigilError {
  try {
    run();
  } catch (e) {
    if (e instanceof VigilError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
}
