/**
 * When a webhook subscription is refreshed (serve.md §6 item 4; design notes §4.4; wire notes
 * §9.4, §11). Pure: the grant's `refreshBefore` and now in, a delay out.
 *
 * - At ¾ of the time remaining until `refreshBefore`, and never sooner than 500 ms — unless 500 ms
 *   would not be strictly before it: a grant of a few hundred milliseconds still refreshes in
 *   time. Past `refreshBefore` already: in 500 ms (never a tight loop). Never later than hourly.
 * - `refreshBefore: null` (no expiry): hourly anyway, because the refresh is where the cursor
 *   advances and `deliveryStatus` is read (wire notes §9.4).
 * - An unparseable value: in 30 s, with a problem text for a status frame (naming its length,
 *   never the server's text).
 */
const MIN_DELAY_MS = 500;
const NO_EXPIRY_REFRESH_MS = 3_600_000;
const UNPARSEABLE_RETRY_MS = 30_000;
const MAX_TEXT = 64;

const RFC3339 =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?(?:([Zz])|([+-])([0-9]{2})(?::?([0-9]{2}))?)?$/;

/**
 * Milliseconds since the epoch of an RFC 3339 date-time, leniently in its syntax (`T`, `t` or a
 * space; seconds optional; a fraction of any length; `Z`, `±HH:MM`, `±HHMM`, `±HH`, or none — read as UTC) and
 * strictly in its values (no month 13, 30 February or hour 24). null when it is none.
 */
export function parseRfc3339(text: string): number | null {
  if (typeof text !== "string" || text.length > MAX_TEXT) return null;
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  // 60: a leap second.
  if (hour > 23 || minute > 59 || second > 60) return null;
  let offsetMinutes = 0;
  // No offset at all: read as UTC (servers write ISO 8601 loosely; guessing the local zone would be worse).
  if (m[8] === undefined && m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = m[11] === undefined ? 0 : Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const fraction = m[7] === undefined ? 0 : Number(`0.${m[7].slice(0, 9)}`) * 1000;
  // Date.UTC reads years 0–99 as 1900–1999: set the year on its own.
  const utc = new Date(Date.UTC(2000, month - 1, day, hour, minute, second)).setUTCFullYear(year);
  return utc + Math.floor(fraction) - offsetMinutes * 60_000;
}

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

export function refreshDelayMs(refreshBefore: string | null, nowMs: number): { delayMs: number; problem: string | null } {
  if (refreshBefore === null) return { delayMs: NO_EXPIRY_REFRESH_MS, problem: null };
  const at = parseRfc3339(refreshBefore);
  if (at === null) {
    const length = typeof refreshBefore === "string" ? refreshBefore.length : 0;
    return {
      delayMs: UNPARSEABLE_RETRY_MS,
      problem: `the server's refreshBefore (${length} characters) is not an RFC 3339 date-time; refreshing in ${UNPARSEABLE_RETRY_MS / 1000} s`,
    };
  }
  const remaining = at - nowMs;
  // Already past as the answer arrives (a skewed clock, a misbehaving server): not at once, or a
  // server that keeps answering so would be re-subscribed (and rotated) in a tight loop.
  if (remaining <= 0) return { delayMs: MIN_DELAY_MS, problem: null };
  // Never later than hourly: the null case's reason holds for a far-off expiry too, and a timer
  // past 2^31-1 ms fires at once (a grant ~33 days out would otherwise refresh in a hot loop).
  let delay = Math.min(Math.floor(remaining * 0.75), NO_EXPIRY_REFRESH_MS);
  if (delay < MIN_DELAY_MS && MIN_DELAY_MS < remaining) delay = MIN_DELAY_MS;
  return { delayMs: delay, problem: null };
}
