import { defineCommand } from "citty";
import { runServe } from "../serve/app.ts";
import { guarded } from "./_command.ts";

// A thin adapter: flags are validated by runServe (usage errors exit 2 before anything starts).
export default defineCommand({
  meta: {
    name: "serve",
    description: "Run model sessions over MCP tools: NDJSON on stdio, or an HTTP + SSE daemon with --listen",
  },
  args: {
    config: { type: "string", description: "Config file (default $VIGIL_CONFIG, then ./vigil.json)", valueHint: "FILE" },
    "state-dir": { type: "string", description: "State directory (default $XDG_STATE_HOME/vigil)", valueHint: "DIR" },
    session: { type: "string", description: "stdio mode: the session name (default: default)", valueHint: "NAME" },
    listen: { type: "string", description: "Daemon mode: serve HTTP on HOST:PORT (a bare PORT binds 127.0.0.1)", valueHint: "HOST:PORT" },
    "session-idle-timeout": { type: "string", description: "Daemon: reap sessions idle this long (default 3600, 0 = never)", valueHint: "SECS" },
    "mcp-events-callback-url": { type: "string", description: "MCP Events: public base URL routing to the listener (needs --listen)", valueHint: "URL" },
    "mcp-events-session": { type: "string", description: "MCP Events: the daemon session owning configured subscriptions", valueHint: "NAME" },
    "mcp-events-reapable": { type: "boolean", description: "MCP Events: let the idle reaper end sessions with live subscriptions" },
  },
  run: ({ args }) =>
    guarded(() =>
      runServe({
        config: args.config,
        "state-dir": args["state-dir"],
        session: args.session,
        listen: args.listen,
        "session-idle-timeout": args["session-idle-timeout"],
        "mcp-events-callback-url": args["mcp-events-callback-url"],
        "mcp-events-session": args["mcp-events-session"],
        "mcp-events-reapable": args["mcp-events-reapable"],
      }),
    ),
});
