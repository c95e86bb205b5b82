/**
 * A minimal newline-delimited JSON-RPC client over a child's stdio, for `vigil policy pin`.
 * Every wait has a deadline, every line a size cap. Non-JSON stdout lines are skipped and counted
 * (as wrap drops them); requests from the server are answered so it never waits on us.
 */
import * as v from "valibot";
import { VigilError } from "../shared/errors.ts";
import type { GroupChild } from "../shared/process-group.ts";
import { within } from "../shared/time.ts";
import { parseStrictJson } from "../shared/strict-json.ts";
import { sinkWrite } from "../shared/sink.ts";

/** Tool input schemas can nest; this is generous but still bounded. */
const MAX_JSON_DEPTH = 128;

const RpcMessage = v.looseObject({
  jsonrpc: v.literal("2.0"),
  id: v.optional(v.union([v.string(), v.number(), v.null()])),
  method: v.optional(v.string()),
  result: v.optional(v.unknown()),
  error: v.optional(v.looseObject({ code: v.number(), message: v.string() })),
});

export interface StdioRpcOptions {
  /** Bound on each request: from sending it until its response arrives. */
  timeoutMs: number;
  maxLineBytes: number;
}

export class StdioRpcClient {
  private nextId = 1;
  private readonly lines: LineReader;
  /** Stdout lines that were not JSON-RPC messages. */
  skippedLines = 0;

  constructor(
    private readonly child: GroupChild,
    private readonly options: StdioRpcOptions,
  ) {
    this.lines = new LineReader(child.stdout, options.maxLineBytes);
  }

  /** Sends a request and resolves with its result. Throws VigilError("server_unreachable"). */
  async request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    this.send({ jsonrpc: "2.0", id, method, params });
    const deadline = performance.now() + this.options.timeoutMs;
    for (;;) {
      const line = await this.lines.next(deadline);
      if (line === "timeout") throw this.failure(`server did not answer ${method} within ${this.options.timeoutMs} ms`);
      if (line === "eof") throw this.failure(`server closed its stdout before answering ${method}`);
      const parsed = parseStrictJson(line, { maxDepth: MAX_JSON_DEPTH });
      const message = parsed.ok ? v.safeParse(RpcMessage, parsed.value) : null;
      if (!message?.success) {
        this.skippedLines++;
        continue;
      }
      const msg = message.output;
      if (msg.method !== undefined) {
        if (msg.id !== undefined && msg.id !== null) this.answerServerRequest(msg.id, msg.method);
        continue;
      }
      if (msg.id !== id) continue; // a stray response; not ours
      if (msg.error) {
        throw new VigilError(
          "server_unreachable",
          `server answered ${method} with error ${msg.error.code}: ${JSON.stringify(msg.error.message.slice(0, 200))}`,
        );
      }
      if (!("result" in msg)) throw this.failure(`server's response to ${method} has neither result nor error`);
      return msg.result;
    }
  }

  notify(method: string, params?: Record<string, unknown>): void {
    this.send(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params });
  }

  /** Closes the server's stdin (the MCP stdio way of asking it to exit). Never throws. */
  closeStdin(): void {
    try {
      ignoreRejection(this.child.stdin.end());
    } catch {
      // already closed or the server is gone
    }
  }

  private answerServerRequest(id: string | number, method: string): void {
    const reply =
      method === "ping"
        ? { jsonrpc: "2.0", id, result: {} }
        : { jsonrpc: "2.0", id, error: { code: -32601, message: "method not supported by vigil policy pin" } };
    this.send(reply);
  }

  private send(message: unknown): void {
    try {
      sinkWrite(this.child.stdin, `${JSON.stringify(message)}\n`);
      // A server that has exited makes the flush fail later (EPIPE); the read side reports that as EOF.
      ignoreRejection(this.child.stdin.flush());
    } catch {
      throw this.failure("cannot write to the server's stdin");
    }
  }

  private failure(message: string): VigilError {
    const skipped = this.skippedLines > 0 ? ` (${this.skippedLines} non-JSON-RPC stdout lines skipped)` : "";
    return new VigilError("server_unreachable", `${message}${skipped}`);
  }
}

function ignoreRejection(value: unknown): void {
  if (value instanceof Promise) value.catch(() => {});
}

type ReadResult = { done: true; value?: undefined } | { done: false; value: Uint8Array };

/** Splits a byte stream into lines, keeping at most `maxLineBytes` of an unfinished line. */
class LineReader {
  private readonly reader: { read(): Promise<ReadResult> };
  private pending: Promise<ReadResult> | null = null;
  private readonly queue: Uint8Array[] = [];
  private partial: Buffer = Buffer.alloc(0);
  private ended = false;

  constructor(
    stream: ReadableStream<Uint8Array>,
    private readonly maxLineBytes: number,
  ) {
    this.reader = stream.getReader() as { read(): Promise<ReadResult> };
  }

  /** The next non-blank line, "eof" when the stream ended, or "timeout" at `deadline` (performance.now ms). */
  async next(deadline: number): Promise<Uint8Array | "eof" | "timeout"> {
    for (;;) {
      const line = this.queue.shift();
      if (line) return line;
      if (this.ended) return "eof";
      const remaining = deadline - performance.now();
      if (remaining <= 0) return "timeout";
      // A read that outlived an earlier deadline is kept, so no chunk is lost.
      this.pending ??= this.reader.read();
      const result = await within(this.pending, remaining);
      if (result === undefined) return "timeout";
      this.pending = null;
      if (result.done) {
        this.ended = true;
        this.take(this.partial);
        continue;
      }
      this.push(result.value);
    }
  }

  private push(chunk: Uint8Array): void {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      this.take(Buffer.concat([this.partial, chunk.subarray(start, nl)]));
      this.partial = Buffer.alloc(0);
      start = nl + 1;
    }
    if (this.partial.length + (chunk.length - start) > this.maxLineBytes) {
      throw new VigilError("server_unreachable", `server sent a stdout line longer than ${this.maxLineBytes} bytes`);
    }
    this.partial = Buffer.concat([this.partial, chunk.subarray(start)]);
  }

  private take(line: Uint8Array): void {
    if (line.length > this.maxLineBytes) {
      throw new VigilError("server_unreachable", `server sent a stdout line longer than ${this.maxLineBytes} bytes`);
    }
    if (line.some((b) => b !== 32 && b !== 9 && b !== 13)) this.queue.push(line);
  }
}
