/**
 * A read cursor over one line held as one or more byte pieces (a large server line arrives as the
 * pieces of several reads and is never joined just to be classified). Strings are jumped over with
 * a native byte search inside each piece; an escape that straddles two pieces is carried across.
 */

export const END = -1;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const EMPTY = new Uint8Array(0);

export class NotJson extends Error {}

export class FrameCursor {
  private index = 0;
  private b: Uint8Array;
  private p = 0;

  constructor(private readonly pieces: readonly Uint8Array[]) {
    this.b = pieces[0] ?? EMPTY;
  }

  /** The byte at the cursor, END when every piece is consumed. */
  peek(): number {
    while (this.p >= this.b.length) {
      if (!this.nextPiece()) return END;
    }
    return this.b[this.p]!;
  }

  advance(): void {
    this.p++;
  }

  /** Skips JSON whitespace; returns the byte after it (not consumed). */
  peekNonWs(): number {
    for (;;) {
      const c = this.peek();
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.p++;
      else return c;
    }
  }

  /**
   * At an opening quote: consumes the string. With `keep`, returns its bytes, quotes included
   * (copied only when it straddles pieces); otherwise null.
   */
  string(keep: boolean): Uint8Array | null {
    const kept: Uint8Array[] | null = keep ? [] : null;
    let start = this.p;
    let from = this.p + 1;
    // Backslashes that ended the previous pieces' part of this string (they may escape our quote).
    let carry = 0;
    for (;;) {
      const b = this.b;
      const q = b.indexOf(QUOTE, from);
      if (q < 0) {
        const run = trailingBackslashes(b, from, b.length);
        carry = run === b.length - from ? carry + run : run;
        kept?.push(b.subarray(start));
        if (!this.nextPiece()) throw new NotJson();
        start = 0;
        from = 0;
        continue;
      }
      const run = trailingBackslashes(b, from, q);
      const slashes = run === q - from ? run + carry : run;
      if (slashes % 2 === 0) {
        kept?.push(b.subarray(start, q + 1));
        this.p = q + 1;
        return kept === null ? null : joined(kept);
      }
      from = q + 1;
      carry = 0;
    }
  }

  /** A number or literal (true/false/null): consumed up to the next delimiter. With `keep`, its bytes. */
  scalar(keep: boolean): Uint8Array | null {
    const first = this.peek();
    const numberStart = first === 0x2d || (first >= 0x30 && first <= 0x39);
    if (!numberStart && first !== 0x74 && first !== 0x66 && first !== 0x6e) throw new NotJson();
    const bytes: number[] | null = keep ? [] : null;
    for (;;) {
      const c = this.peek();
      if (c === END || c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) break;
      bytes?.push(c);
      this.p++;
    }
    return bytes === null ? null : Uint8Array.from(bytes);
  }

  private nextPiece(): boolean {
    if (this.index + 1 >= this.pieces.length) return false;
    this.b = this.pieces[++this.index]!;
    this.p = 0;
    return true;
  }
}

/** How many backslashes end b[from, to). */
function trailingBackslashes(b: Uint8Array, from: number, to: number): number {
  let run = 0;
  while (to - 1 - run >= from && b[to - 1 - run] === BACKSLASH) run++;
  return run;
}

function joined(parts: Uint8Array[]): Uint8Array {
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}
