import { defineCommand } from "citty";
import { VERSION } from "./shared/build-info.ts";
import { commands } from "./commands/index.ts";

export const main = defineCommand({
  meta: {
    name: "vigil",
    version: VERSION,
    description: "Watch over MCP servers: policy proxy with session evidence, capture verifier, events daemon",
  },
  subCommands: commands,
});
