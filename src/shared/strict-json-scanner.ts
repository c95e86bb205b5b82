/**
 * The precise strict-JSON scanner: walks every token, iteratively, and reports the first failure
 * with its kind and offset. strict-json.ts runs it when its fast path finds anything amiss.
 */

export type StrictJsonFault = "invalid_utf8" | "syntax" | "duplicate_key" | "non_finite_number" | "too_deep";

export interface StrictJsonFailure {
  ok: false;
  fault: StrictJsonFault;
  message: string;
  /** UTF-16 offset into the decoded text where the problem was found. */
  offset: number;
}

export function scanStrictJson(text: string, maxDepth: number): StrictJsonFailure | null {
  return new Scanner(text, maxDepth).run();
}

const enum C {
  Tab = 9,
  Lf = 10,
  Cr = 13,
  Space = 32,
  Quote = 34,
  Plus = 43,
  Comma = 44,
  Minus = 45,
  Dot = 46,
  Slash = 47,
  Zero = 48,
  Nine = 57,
  Colon = 58,
  UpperE = 69,
  LBracket = 91,
  Backslash = 92,
  RBracket = 93,
  LowerE = 101,
  LBrace = 123,
  RBrace = 125,
}

/** One open container on the explicit stack. */
interface Frame {
  object: boolean;
  keys: Set<string> | null;
}

class Scanner {
  private pos = 0;
  private readonly stack: Frame[] = [];

  constructor(
    private readonly s: string,
    private readonly maxDepth: number,
  ) {}

  run(): StrictJsonFailure | null {
    try {
      this.ws();
      this.value();
      this.ws();
      if (this.pos !== this.s.length) return this.fail("syntax", "unexpected data after the JSON value");
      return null;
    } catch (e) {
      if (e instanceof Refusal) return e.failure;
      throw e;
    }
  }

  private fail(fault: StrictJsonFault, message: string): never {
    throw new Refusal({ ok: false, fault, message: `${message} at offset ${this.pos}`, offset: this.pos });
  }

  private ws(): void {
    const s = this.s;
    let p = this.pos;
    for (;;) {
      const c = s.charCodeAt(p);
      if (c === C.Space || c === C.Lf || c === C.Cr || c === C.Tab) p++;
      else break;
    }
    this.pos = p;
  }

  /** Scans one value, iteratively for containers. */
  private value(): void {
    for (;;) {
      this.ws();
      const c = this.s.charCodeAt(this.pos);
      if (c === C.LBrace || c === C.LBracket) {
        if (this.stack.length >= this.maxDepth) this.fail("too_deep", `nesting deeper than ${this.maxDepth} levels`);
        this.pos++;
        const object = c === C.LBrace;
        this.stack.push({ object, keys: object ? new Set() : null });
        this.ws();
        const close = object ? C.RBrace : C.RBracket;
        if (this.s.charCodeAt(this.pos) === close) {
          this.pos++;
          this.stack.pop();
          if (this.afterValue()) return;
          continue;
        }
        if (object) this.key();
        continue;
      }
      this.scalar(c);
      if (this.afterValue()) return;
    }
  }

  /** After a value inside containers: consumes `,` (and the next key) or closers. True when the top-level value is done. */
  private afterValue(): boolean {
    for (;;) {
      const top = this.stack[this.stack.length - 1];
      if (!top) return true;
      this.ws();
      const c = this.s.charCodeAt(this.pos);
      if (c === C.Comma) {
        this.pos++;
        if (top.object) {
          this.ws();
          this.key();
        }
        return false;
      }
      if (c === (top.object ? C.RBrace : C.RBracket)) {
        this.pos++;
        this.stack.pop();
        continue;
      }
      this.fail("syntax", top.object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }

  private key(): void {
    if (this.s.charCodeAt(this.pos) !== C.Quote) this.fail("syntax", "expected a string key");
    const start = this.pos;
    const name = this.string();
    const frame = this.stack[this.stack.length - 1]!;
    const keys = frame.keys!;
    if (keys.has(name)) {
      this.pos = start;
      this.fail("duplicate_key", `duplicate key ${JSON.stringify(name.slice(0, 64))}`);
    }
    keys.add(name);
    this.ws();
    if (this.s.charCodeAt(this.pos) !== C.Colon) this.fail("syntax", "expected ':'");
    this.pos++;
  }

  private scalar(c: number): void {
    if (c === C.Quote) {
      this.string();
      return;
    }
    if (c === C.Minus || (c >= C.Zero && c <= C.Nine)) {
      this.number();
      return;
    }
    if (this.s.startsWith("true", this.pos)) this.pos += 4;
    else if (this.s.startsWith("false", this.pos)) this.pos += 5;
    else if (this.s.startsWith("null", this.pos)) this.pos += 4;
    else this.fail("syntax", this.pos >= this.s.length ? "unexpected end of input" : "unexpected character");
  }

  /** Scans a string starting at its opening quote; returns its unescaped value. */
  private string(): string {
    const s = this.s;
    const start = this.pos + 1;
    let from = start;
    let escaped = false;
    for (;;) {
      // Jump to the next quote natively, then check the run before it for escapes and control characters.
      const q = s.indexOf('"', from);
      if (q < 0) {
        this.pos = s.length;
        this.fail("syntax", "unterminated string");
      }
      let k = from;
      for (; k < q; k++) {
        const c = s.charCodeAt(k);
        if (c < C.Space) {
          this.pos = k;
          this.fail("syntax", "control character in string");
        }
        if (c === C.Backslash) {
          escaped = true;
          k = this.escape(k);
        }
      }
      if (k === q) {
        this.pos = q + 1;
        break;
      }
      // An escape (\") consumed the quote at q: keep looking after it.
      from = k;
    }
    const raw = s.slice(start, this.pos - 1);
    return escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  /** Validates the escape at index i (a backslash); returns the index of its last character. */
  private escape(i: number): number {
    const s = this.s;
    const e = s.charCodeAt(i + 1);
    switch (e) {
      case C.Quote:
      case C.Backslash:
      case C.Slash:
      case 98: // b
      case 102: // f
      case 110: // n
      case 114: // r
      case 116: // t
        return i + 1;
      case 117: // u
        for (let k = i + 2; k < i + 6; k++) {
          const h = s.charCodeAt(k);
          const hex = (h >= 48 && h <= 57) || (h >= 65 && h <= 70) || (h >= 97 && h <= 102);
          if (!hex) {
            this.pos = k;
            this.fail("syntax", "bad \\u escape");
          }
        }
        return i + 5;
      default:
        this.pos = i;
        this.fail("syntax", "bad escape");
    }
  }

  private number(): void {
    const s = this.s;
    const start = this.pos;
    let p = start;
    if (s.charCodeAt(p) === C.Minus) p++;
    const first = s.charCodeAt(p);
    if (first === C.Zero) p++;
    else if (first > C.Zero && first <= C.Nine) while (isDigit(s.charCodeAt(p))) p++;
    else {
      this.pos = p;
      this.fail("syntax", "bad number");
    }
    if (s.charCodeAt(p) === C.Dot) {
      p++;
      if (!isDigit(s.charCodeAt(p))) {
        this.pos = p;
        this.fail("syntax", "bad number: digit expected after '.'");
      }
      while (isDigit(s.charCodeAt(p))) p++;
    }
    const e = s.charCodeAt(p);
    if (e === C.LowerE || e === C.UpperE) {
      p++;
      const sign = s.charCodeAt(p);
      if (sign === C.Plus || sign === C.Minus) p++;
      if (!isDigit(s.charCodeAt(p))) {
        this.pos = p;
        this.fail("syntax", "bad number: digit expected in exponent");
      }
      while (isDigit(s.charCodeAt(p))) p++;
    }
    if (!Number.isFinite(Number(s.slice(start, p)))) {
      this.fail("non_finite_number", `number ${s.slice(start, Math.min(p, start + 32))} is not finite`);
    }
    this.pos = p;
  }
}

function isDigit(c: number): boolean {
  return c >= C.Zero && c <= C.Nine;
}

class Refusal {
  constructor(readonly failure: StrictJsonFailure) {}
}
