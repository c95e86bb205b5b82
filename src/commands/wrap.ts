import { defineCommand } from "citty";
import { parseWrapArgs } from "../wrap/options.ts";
import { runWrap } from "../wrap/run.ts";
import { guarded } from "./_command.ts";

// citty renders --help from these; parsing is strict and done by parseWrapArgs (unknown flags,
// missing values and conflicting combinations are refused before anything is spawned).
export default defineCommand({
  meta: { name: "wrap", description: "Run a stdio MCP server behind a policy proxy that records session evidence" },
  args: {
    policy: { type: "string", description: "Policy file (YAML or JSON)", valueHint: "FILE" },
    "allow-all": { type: "boolean", description: "Observe only: allow and record every call" },
    "dry-run": { type: "boolean", description: "Evaluate and record would_deny, never block" },
    "server-id": { type: "string", description: "Label of the wrapped server (default: basename of CMD)" },
    "event-source": { type: "string", description: "CloudEvents source URI (scheme://…), required with evidence" },
    "decision-log": { type: "string", description: "Decision log (NDJSON CloudEvents)", valueHint: "FILE" },
    "decision-log-new": { type: "boolean", description: "The decision log must be new (required with --session-stop-out)" },
    "decision-log-fsync": { type: "boolean", description: "fdatasync the decision log after every line" },
    "receipts-out": { type: "string", description: "Request receipts (NDJSON CloudEvents)", valueHint: "FILE" },
    "session-context-out": { type: "string", description: "Session-context record", valueHint: "FILE" },
    "session-stop-out": { type: "string", description: "Session-stop record", valueHint: "FILE" },
    "capture-dir": { type: "string", description: "Write every output under DIR with a manifest", valueHint: "DIR" },
    "max-message-bytes": { type: "string", description: "Per-message cap, both directions (default 33554432)" },
    "shutdown-grace-ms": { type: "string", description: "Grace after closing the server's stdin (default 3000)" },
    "on-evidence-failure": { type: "string", description: "deny (default) or continue" },
  },
  run: ({ rawArgs }) => guarded(() => runWrap(parseWrapArgs(rawArgs))),
});
