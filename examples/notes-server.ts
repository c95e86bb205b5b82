/**
 * A tiny, ordinary MCP stdio server for the demo: the kind of server an operator would put behind
 * `vigil wrap`. It knows nothing about vigil; the policy in examples/policy.yaml does the guarding.
 *
 *   bun examples/notes-server.ts
 *
 * Notes live in memory, so the demo's `delete_notes` (which the policy blocks anyway) can never
 * destroy anything real.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const notes = new Map<string, string>([
  ["welcome", "Welcome to the notes server. Every call you make here passes through vigil's policy."],
  ["shopping", "milk, eggs, coffee"],
]);

const text = (t: string, isError = false) => ({ content: [{ type: "text" as const, text: t }], isError });

const server = new McpServer({ name: "notes-server", version: "1.0.0" });

server.registerTool(
  "list_notes",
  { description: "Lists the names of all notes.", inputSchema: {} },
  () => text([...notes.keys()].sort().join("\n")),
);

server.registerTool(
  "read_note",
  { description: "Returns the text of one note.", inputSchema: { name: z.string().describe("The note's name") } },
  ({ name }) => {
    const note = notes.get(name);
    return note === undefined ? text(`no note named ${JSON.stringify(name)}`, true) : text(note);
  },
);

server.registerTool(
  "write_note",
  {
    description: "Creates or replaces a note.",
    inputSchema: { name: z.string().describe("The note's name"), text: z.string().describe("The note's text") },
  },
  ({ name, text: body }) => {
    notes.set(name, body);
    return text(`saved ${name} (${body.length} characters)`);
  },
);

server.registerTool("delete_notes", { description: "Deletes every note.", inputSchema: {} }, () => {
  const count = notes.size;
  notes.clear();
  return text(`deleted ${count} notes`);
});

await server.connect(new StdioServerTransport());
// Diagnostics go to stderr: stdout is the MCP stream.
process.stderr.write(`notes-server ready pid=${process.pid}\n`);
