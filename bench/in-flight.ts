/**
 * Runs `one(i)` for every i in from..to-1 with at most `window` calls in flight (the benches make
 * hundreds of runtime subscriptions this way). `one` resolves with null on success or a one-line
 * reason; the result counts the failures and keeps the first reason as a sample.
 */
export async function inFlight(
  from: number,
  to: number,
  window: number,
  one: (i: number) => Promise<string | null>,
): Promise<{ failures: number; sample: string | null }> {
  let next = from;
  let failures = 0;
  let sample: string | null = null;
  const worker = async () => {
    while (next < to) {
      const problem = await one(next++);
      if (problem !== null) {
        failures++;
        sample ??= problem;
      }
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
  return { failures, sample };
}
