/**
 * Reading the whole of `events/list` (serve.md §6 item 1; design notes §5.2): paged through
 * `nextCursor`, at most 20 pages and 1,000 descriptors, ending on a repeated cursor (a broken
 * server that hands back the same page forever cannot loop us). Descriptors without a string name
 * are skipped; `delivery` keeps only strings.
 */
import { EventsRpcError } from "../rules/errors.ts";
import { boundText } from "../rules/server-text.ts";

const MAX_LIST_PAGES = 20;
const MAX_DESCRIPTORS = 1000;

export interface EventDescriptor {
  name: string;
  delivery: string[];
  [key: string]: unknown;
}

/** `page(cursor)` sends one `events/list` (no cursor: the first page) and returns its raw result. */
export async function readAllPages(page: (cursor: string | undefined) => Promise<Record<string, unknown>>): Promise<EventDescriptor[]> {
  const events: EventDescriptor[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let n = 0; n < MAX_LIST_PAGES; n++) {
    const result = await page(cursor);
    const list = result.events;
    if (!Array.isArray(list)) throw new EventsRpcError(-32603, "events/list answered without an events array", undefined);
    for (const d of list) {
      if (events.length >= MAX_DESCRIPTORS) break;
      if (typeof d !== "object" || d === null || typeof (d as { name?: unknown }).name !== "string") continue;
      const delivery = Array.isArray((d as { delivery?: unknown }).delivery)
        ? ((d as { delivery: unknown[] }).delivery.filter((m) => typeof m === "string") as string[])
        : [];
      // The name goes into refusals ("it offers: …"); one longer than the cut matches no subscription anyway.
      events.push({ ...(d as Record<string, unknown>), name: boundText((d as { name: string }).name), delivery });
    }
    const next = result.nextCursor;
    if (typeof next !== "string" || next === "" || seen.has(next)) break;
    seen.add(next);
    cursor = next;
  }
  return events;
}
