// `vigil serve --listen`: a command body is read the same way whether or not it declares its length
// (issue 16 reads a Content-Length body whole, a chunked one chunk by chunk up to the cap): both
// are answered, and a chunked body over the 1 MiB cap gets the JSON 413 `too_large`.
import { describe, expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import { serveEnvironment, startDaemon } from "../helpers/serve.ts";

const cleanups = e2eSuite();

/** A body sent as a stream: fetch frames it chunked, with no Content-Length. */
function chunked(text: string, pieces = 4): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const step = Math.ceil(bytes.length / pieces);
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(at, at + step));
      at += step;
    },
  });
}

describe("vigil serve --listen: command bodies", () => {
  test("with and without Content-Length a command is answered; a chunked body over the cap is 413 too_large", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-serve-command-body" });
    const d = await startDaemon(cleanups, env);
    const url = `${d.base}/v1/sessions/s1/commands`;
    const json = { "content-type": "application/json" };

    const declared = await fetch(url, { method: "POST", headers: json, body: JSON.stringify({ type: "get_state", id: "declared" }) });
    expect(declared.status).toBe(200);
    expect(await declared.json()).toMatchObject({ type: "response", id: "declared", success: true });

    const streamed = await fetch(url, { method: "POST", headers: json, body: chunked(JSON.stringify({ type: "get_state", id: "chunked" })) });
    expect(streamed.status).toBe(200);
    expect(await streamed.json()).toMatchObject({ type: "response", id: "chunked", success: true });

    const big = JSON.stringify({ type: "prompt", id: "big", message: "x".repeat(1_100_000) });
    const over = await fetch(url, { method: "POST", headers: json, body: chunked(big, 16) });
    expect(over.status).toBe(413);
    expect(await over.json()).toMatchObject({ type: "response", id: "big", success: false, error: { code: "too_large" } });

    // A body that is not JSON, declared or not, is refused with its response frame, and the session serves on.
    const bad = await fetch(url, { method: "POST", headers: json, body: "{not json" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
    const after = await fetch(url, { method: "POST", headers: json, body: JSON.stringify({ type: "get_state", id: "after" }) });
    expect(after.status).toBe(200);
  });
});
