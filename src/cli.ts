#!/usr/bin/env bun
// Entry point (the compile entry): one error boundary around the dispatch (commands/_command.ts),
// which routes the argv (unknown commands and flags are refused with one line, exit 2) and runs
// the command. citty colours its usage text unless NO_COLOR is set, even when stdout is a pipe, so
// colour is turned off for anything that is not a terminal (before citty is loaded: it reads the
// variable once).
if (!process.stdout.isTTY) process.env.NO_COLOR = "1";
const { dispatch, guarded } = await import("./commands/_command.ts");
const { main } = await import("./main.ts");

await guarded(() => dispatch(main, process.argv.slice(2)));
