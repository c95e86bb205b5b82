#!/usr/bin/env bun
// Entry point (the compile entry): run the root command; nothing else.
import { runMain } from "citty";
import { main } from "./main.ts";

await runMain(main);
