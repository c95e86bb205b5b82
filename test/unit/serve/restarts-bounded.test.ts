/**
 * The daemon's session restarts stay bounded over months (issue 12 item F): how a session's last
 * restart went is kept only while it can still change a delay — up to the healthy period.
 */
import { expect, test } from "bun:test";
import { SessionRestarts } from "../../../src/serve/daemon/restarts.ts";
import { SUPERVISION_BACKOFF } from "../../../src/shared/backoff.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { waitFor } from "../../helpers/wait.ts";

test("sessions that restarted and then stayed up the healthy period are forgotten at the next restart", async () => {
  const clock = new FakeScheduler();
  const reopened: string[] = [];
  const r = new SessionRestarts(async (name) => void reopened.push(name), clock);
  for (let i = 0; i < 100; i++) r.failed(`s${i}`);
  clock.advance(1000);
  await waitFor(() => reopened.length === 100, { timeoutMs: 1000, label: "100 reopens" });
  expect(r.remembered).toBe(100);

  // One of them fails again soon: its backoff doubles, so its entry must stay.
  clock.advance(5);
  expect(r.failed("s0")).toBe(2000);
  clock.advance(2000);
  await waitFor(() => reopened.length === 101, { timeoutMs: 1000, label: "s0 reopened" });
  expect(r.remembered).toBe(100);

  // Ten minutes on, s1 fails: by its restart the others have been up the healthy period and are
  // dropped (s1's own entry too, before its new one is kept).
  clock.advance(SUPERVISION_BACKOFF.healthyMs);
  expect(r.failed("s1")).toBe(1000);
  clock.advance(1000);
  await waitFor(() => reopened.length === 102, { timeoutMs: 1000, label: "s1 reopened" });
  expect(r.remembered).toBe(1);

  // A forgotten session that fails starts over, exactly as if it were still remembered.
  expect(r.failed("s2")).toBe(1000);
  r.stop();
});
