/**
 * Joins views that sit next to each other in the same chunk into one view, so the lines of one
 * read that are all forwarded go out in one write (what a byte relay does), with no copying.
 */
export function coalesceRuns(views: Uint8Array[]): Uint8Array[] {
  if (views.length < 2) return views;
  const out: Uint8Array[] = [];
  let run = views[0]!;
  for (let i = 1; i < views.length; i++) {
    const next = views[i]!;
    if (next.buffer === run.buffer && run.byteOffset + run.byteLength === next.byteOffset) {
      run = new Uint8Array(run.buffer, run.byteOffset, run.byteLength + next.byteLength);
    } else {
      out.push(run);
      run = next;
    }
  }
  out.push(run);
  return out;
}
