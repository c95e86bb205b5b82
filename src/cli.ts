#!/usr/bin/env bun
// Entry point (the compile entry). Picks the command or refuses an unknown one with one line
// (exit 2), then hands over to citty. citty colours its usage text unless NO_COLOR is set, even
// when stdout is a pipe, so colour is turned off for anything that is not a terminal.
import { commands } from "./commands/index.ts";
import { EXIT } from "./shared/errors.ts";
import { logLine } from "./shared/log.ts";

if (!process.stdout.isTTY) process.env.NO_COLOR = "1";
const { runMain, showUsage } = await import("citty");
const { main } = await import("./main.ts");

const first = process.argv[2];
if (first === undefined) {
  await showUsage(main);
  process.exit(EXIT.usage);
}
if (!first.startsWith("-") && !Object.hasOwn(commands, first)) {
  logLine(`unknown command ${JSON.stringify(first)} (commands: ${Object.keys(commands).join(", ")}; see vigil --help)`);
  process.exit(EXIT.usage);
}
await runMain(main);
