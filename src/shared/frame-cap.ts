/**
 * The largest frame `vigil serve` stores and sends: one transcript record, newline included
 * (serve.md §3, §4; serve/state/transcript.ts). Here, below every layer, so that the parts that
 * build frames from outside data (the events client: an `mcp_event` carries a server's occurrence
 * verbatim) can keep what they accept within it without importing serve.
 */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;
