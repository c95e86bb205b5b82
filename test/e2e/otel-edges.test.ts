// Edge cases of OpenTelemetry traces (issue 15 item 2) against the compiled binary: a collector
// that accepts connections and never answers neither slows a run nor holds serve's exit past the
// flush bound, and neither does one that answers 500 at once; no secret header in any line; the
// spans either drops are said in one line.
import { describe, expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import { StdioServe, eventsEnvironment } from "../helpers/events-serve.ts";
import { isRunEnd } from "../helpers/serve.ts";

const cleanups = e2eSuite();
const OTEL_TOKEN = "otel-edge-token-0c5a77e1";

function collector(answer: "never" | "500") {
  let requests = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 0,
    fetch: () => {
      requests++;
      return answer === "500" ? new Response("boom", { status: 500 }) : new Promise<Response>(() => {});
    },
  });
  cleanups.add(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, requests: () => requests };
}

describe("vigil serve: traces to a collector that misbehaves", () => {
  for (const answer of ["never", "500"] as const) {
    test(`a collector that ${answer === "never" ? "never answers" : "answers 500"}: the runs end ok, exit 0 within the flush bound, no secret`, async () => {
      const c = collector(answer);
      const env = await eventsEnvironment(cleanups, {
        fixtureEnv: false,
        servers: () => [],
        // The default export timeout (10 s) is longer than what the exit may take.
        knobs: { OTEL_EXPORTER_OTLP_ENDPOINT: c.url, OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${OTEL_TOKEN}` },
      });
      const serve = StdioServe.start(cleanups, env, "slow-collector");
      for (const id of ["p1", "p2"]) {
        await serve.command({ type: "prompt", id, message: "hello" });
        await serve.until((f) => isRunEnd(f) && serve.count(isRunEnd) === (id === "p1" ? 1 : 2));
      }
      serve.client.closeStdin();
      // Shutdown (grace 3 s at most, nothing to wait on here) + the 2 s flush, far below the 10 s export timeout.
      expect(await serve.client.exited(8000)).toEqual({ code: 0, signal: null });
      expect(serve.frames.filter(isRunEnd).map((f) => f.status)).toEqual(["ok", "ok"]);
      expect(c.requests()).toBeGreaterThan(0);
      const stderr = serve.client.stderrText();
      expect(stderr).not.toContain(OTEL_TOKEN);
      expect(stderr).not.toContain("boom");
      // The spans dropped are said, once: a 500 when it comes; a silence when the exit's flush gives
      // up on it (the export still out then is dropped with the process, not in silence).
      const failures = stderr.split("\n").filter((l) => l.includes("traces: export"));
      expect(failures).toHaveLength(1);
      if (answer === "500") expect(failures[0]).toMatch(/traces: export to http:\/\/127\.0\.0\.1:\d+\/v1\/traces failed \(HTTP 500\): \d+ span\(s\) dropped/);
      else expect(failures[0]).toMatch(/traces: export to http:\/\/127\.0\.0\.1:\d+\/v1\/traces failed \(timeout\): \d+ span\(s\) dropped; .*serve is exiting/);
    });
  }
});
