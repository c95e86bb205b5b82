/**
 * What one poll page's commit waits for on this disk (issue 16, the "events poll ≥ 50 % of the bare
 * client + fdatasync" row): wall clock per page on real files in the temp dir, three ways,
 * alternating in rounds (bench/ab.ts):
 *
 *   log only   the pending log appended and fdatasync'd: what the bare client + fdatasync does per
 *              page, and the floor of any commit;
 *   before     the store's commit as it was to the second pass: the log, then the snapshot written
 *              atomically (temp, fsync, rename, directory fsync) with the subscription's new dedup
 *              window: three syncs in series (the same store for the log, then writeFileAtomic);
 *   snapshot   the store's commit of a whole record (setSubscription: what every page did up to the
 *              fourth pass, events-store.ts, snapshot-write.ts): the snapshot's temp written and
 *              fsync'd while the log syncs, renamed (and the directory synced) once the log is
 *              durable, which keeps serve.md §3's order with two syncs in series;
 *   now        a page as the store commits it since the fifth pass (setPosition, positions.ts): the
 *              cursor and the page's ids as one `position` record in the log's own append, and the
 *              snapshot a checkpoint at most once a second — one sync per page.
 *
 * Each page is 50 events of the fixture's size and one subscription with a full 1,024-id window;
 * the variants write to their own directories. The figures are this disk's (its sync latency) and
 * the commit's CPU, wall clock.
 *
 *   bun bench/events/commit-syncs.ts [--iterations N]   (pages per variant per round)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEDUP_CAPACITY } from "../../src/events/rules/dedup.ts";
import { EventsStore } from "../../src/events/store/events-store.ts";
import { SubscriptionTable } from "../../src/events/store/snapshot-table.ts";
import { copyRecord } from "../../src/events/store/snapshot.ts";
import type { PendingEntry } from "../../src/events/types.ts";
import { writeFileAtomic } from "../../src/shared/durable/atomic-file.ts";
import { alternate, iterations } from "../ab.ts";
import { fmt, table } from "../report.ts";

const n = iterations({ usage: "bun bench/events/commit-syncs.ts [--iterations N]", fallback: 40, min: 5, max: 10_000 });
const PAGE = 50;
/** Pages start here, so that a page's full window holds only ids of earlier events (none negative). */
const FIRST_PAGE = Math.ceil(DEDUP_CAPACITY / PAGE);
const KEY = 'tickets\u0000ticket.updated\u0000{}';
const OPTIONS = { maxPending: 100_000_000, maxPendingBytes: 1 << 30 };

const event = (page: number, i: number): Omit<PendingEntry, "seq"> => ({
  action: "follow_up",
  server: "tickets",
  name: "ticket.updated",
  arguments: {},
  event: { eventId: `evt-${page * PAGE + i}`, name: "ticket.updated", timestamp: "2026-12-02T00:00:00.000Z", data: { ticket: page * PAGE + i, status: "open", note: "n".repeat(160) } },
});
const record = (page: number) => copyRecord({ cursor: `c-${page}`, recent: Array.from({ length: DEDUP_CAPACITY }, (_, i) => `evt-${page * PAGE - DEDUP_CAPACITY + i}`) });
const root = mkdtempSync(join(tmpdir(), "vigil-bench-commit-syncs-"));
try {
  const dirs = ["log-only", "before", "snapshot", "now"].map((name) => {
    mkdirSync(join(root, name));
    return join(root, name);
  });
  const [logOnly, before, whole, now] = await Promise.all(dirs.map((d) => EventsStore.open(d, OPTIONS)));
  const pages = [0, 0, 0, 0];
  now!.setSubscription(KEY, record(FIRST_PAGE));
  await now!.commit();
  const take = (store: EventsStore, v: number) => {
    const page = FIRST_PAGE + ++pages[v]!;
    for (let i = 0; i < PAGE; i++) store.tryAdd(event(page, i));
    return page;
  };
  const beforeTable = new SubscriptionTable();
  const beforeSnapshot = join(dirs[1]!, "mcp-events.json");
  const variants: (() => Promise<void>)[] = [
    async () => {
      take(logOnly!, 0);
      await logOnly!.commit();
    },
    async () => {
      beforeTable.set(KEY, record(take(before!, 1)));
      const text = beforeTable.fitted(0, null);
      if (typeof text !== "string") throw text;
      await before!.commit();
      await writeFileAtomic(beforeSnapshot, text);
    },
    async () => {
      whole!.setSubscription(KEY, record(take(whole!, 2)));
      await whole!.commit();
    },
    async () => {
      const page = take(now!, 3);
      now!.setPosition(KEY, `c-${page}`, Array.from({ length: PAGE }, (_, i) => `evt-${page * PAGE + i}`));
      await now!.commit();
    },
  ];
  const [a, b, c, d] = await alternate(variants, { calls: n, warmup: 5 });
  await Promise.all([logOnly, before, whole, now].map((s) => s!.close()));
  // The same state after the same number of pages: the same snapshot, and (once the position store's close wrote its checkpoint) the same record.
  if (readFileSync(beforeSnapshot, "utf8") !== readFileSync(join(dirs[2]!, "mcp-events.json"), "utf8")) throw new Error("before and snapshot wrote different snapshots");
  const last = FIRST_PAGE + pages[3]!;
  const stored = (await EventsStore.readSnapshot(dirs[3]!))?.subscriptions[KEY];
  if (stored?.cursor !== `c-${last}` || stored.recent.length !== DEDUP_CAPACITY || stored.recent.at(-1) !== `evt-${last * PAGE + PAGE - 1}`) throw new Error("now did not store the last page's position");
  const row = (name: string, us: number) => [name, fmt(us), `${fmt((us / b!) * 100)} %`];
  const lines = [
    `One poll page's commit on real files (${PAGE} events, one subscription with a full window), wall µs per page, median of rounds; Bun ${Bun.version}, ${n} pages per variant per round`,
    "",
    ...table(["commit", "µs per page", "vs before"], [
      row("pending log appended + fdatasync only (the bare client + fdatasync's work per page)", a!),
      row("before: the log, then the snapshot (temp, fsync, rename, directory fsync)", b!),
      row("snapshot per page (to the fourth pass): the snapshot's temp synced alongside the log, renamed after it", c!),
      row("now: a position record in the log's append; the snapshot a checkpoint at most once a second", d!),
    ], ["l", "r", "r"]),
    "",
  ];
  process.stdout.write(lines.join("\n"));
} finally {
  rmSync(root, { recursive: true, force: true });
}
