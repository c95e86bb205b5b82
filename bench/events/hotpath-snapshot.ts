/**
 * Micro-benchmarks of two per-page steps of MCP Events ingestion that grew with what a session
 * holds rather than with the page (issue 16), old against new, in one process:
 *
 * - the capability check before every `events/*` request (events/wire/server-events.ts): a deep
 *   copy of the connection's whole `initialize` result (a real one: the events fixture's, with its
 *   instructions and capabilities) and a walk of it, per poll page — against reading it once per
 *   connection;
 * - the snapshot text at each commit (events/store/snapshot-table.ts), after one subscription's
 *   record changed (a poll page: its window and cursor), at 1, 100 and 1,000 subscriptions with
 *   full dedup windows (1,024 ids): JSON.stringify of every record per commit — against each
 *   record's text (and its UTF-8 size) made once when it is set, and the snapshot joined from them
 *   after a check that it fits the bound its reader accepts (`fitted`, what the store writes).
 *
 *   bun bench/events/hotpath-snapshot.ts [--iterations N]
 *
 * Both variants of a case are checked to give the same answer (the same text, the same verdict)
 * before they are timed alternately; µs per page, median of rounds (bench/ab.ts).
 */
import { eventsCapability } from "../../src/events/rules/capability.ts";
import { SubscriptionTable } from "../../src/events/store/snapshot-table.ts";
import { SNAPSHOT_VERSION, type SubscriptionRecord, copyRecord } from "../../src/events/store/snapshot.ts";
import { type Case, beforeNowRows, beforeNowTable, iterations } from "../ab.ts";

const n = iterations({ usage: "bun bench/events/hotpath-snapshot.ts [--iterations N]", fallback: 200, min: 20, max: 100_000 });

/** An initialize result the size of a real one (the fixture's shape, with a page of instructions). */
const INITIALIZE = {
  protocolVersion: "2025-06-18",
  capabilities: {
    tools: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    prompts: { listChanged: true },
    logging: {},
    extensions: { "io.modelcontextprotocol/events": { listChanged: true, delivery: ["poll", "push", "webhook"] } },
  },
  serverInfo: { name: "events-fixture", title: "Events fixture", version: "1.0.0", websiteUrl: "https://example.com/fixture" },
  instructions: "Use events/list to discover event types. ".repeat(40),
};

/** What `pool.rawInitializeResult` returns on every call: a private deep copy (observed-transport.ts). */
const readRaw = () => structuredClone(INITIALIZE) as Record<string, unknown>;
const connection = {};
let capable: { client: object; supported: boolean } | null = null;

const capabilityCase: Case = {
  name: "capability check before one events/poll (per page)",
  before: () => eventsCapability(readRaw()).supported,
  after: () => {
    if (capable?.client !== connection) capable = { client: connection, supported: eventsCapability(readRaw()).supported };
    return capable.supported;
  },
  same: (x) => String(x),
};

const window = (s: number, page: number) => Array.from({ length: 1024 }, (_, i) => `evt-${s}-${page * 50 + i}`);
const keyOf = (s: number) => `srv\u0000ticket.updated\u0000{"queue":${s}}`;

/** One commit's snapshot text after subscription 0 took a page, with `subs` subscriptions in the session. */
function snapshotCase(subs: number): Case {
  const records = new Map<string, SubscriptionRecord>();
  const table = new SubscriptionTable();
  for (let s = 0; s < subs; s++) {
    const record = copyRecord({ cursor: `c-${s}`, recent: window(s, 0) });
    records.set(keyOf(s), record);
    table.set(keyOf(s), record);
  }
  let pageBefore = 0;
  let pageAfter = 0;
  // The pages' records are made up front: only what a commit does with them is timed.
  const pages = Array.from({ length: 64 }, (_, page) => copyRecord({ cursor: `c-0-${page}`, recent: window(0, page + 1) }));
  const moved = (page: number) => pages[page]!;
  // The write encodes the text (atomic-file.ts): that flattens a joined string, so it is timed too.
  const written = (text: string) => (Buffer.byteLength(text), text);
  return {
    name: `snapshot text after one page, ${subs.toLocaleString("en-US")} subscription${subs === 1 ? "" : "s"} (full windows)`,
    before: () => {
      records.set(keyOf(0), moved(++pageBefore % 64));
      const subscriptions: Record<string, SubscriptionRecord> = {};
      for (const [key, record] of records) subscriptions[key] = record;
      return written(`${JSON.stringify({ version: SNAPSHOT_VERSION, subscriptions, last_client_ms: 1700000000000 })}\n`);
    },
    after: () => {
      table.set(keyOf(0), moved(++pageAfter % 64));
      const text = table.fitted(0, 1700000000000);
      if (typeof text !== "string") throw text;
      return written(text);
    },
    same: (x) => `${(x as string).length}:${Bun.hash(x as string)}`,
    share: subs >= 1000 ? 0.05 : subs >= 100 ? 0.25 : 1,
  };
}

const rows = await beforeNowRows(n, [capabilityCase, snapshotCase(1), snapshotCase(100), snapshotCase(1000)]);
process.stdout.write(beforeNowTable(`Per-page steps that grew with the session (issue 16), µs per page, before → now; Bun ${Bun.version}, ${n} iterations`, rows).join("\n"));
