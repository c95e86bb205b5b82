// Loaded before every test file (bunfig.toml [test] preload): isolate HOME/XDG so no test can
// touch a real home directory, turn colour off, and give slow-but-bounded tests room on 2 cores.
import { setDefaultTimeout } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const home = mkdtempSync(join(tmpdir(), "vigil-test-home-"));
process.env.HOME = home;
process.env.XDG_STATE_HOME = join(home, ".local/state");
process.env.XDG_CONFIG_HOME = join(home, ".config");
process.env.NO_COLOR = "1";
// Covers the first test file only (Bun scopes it per file): `make test` passes --timeout 30000 for all.
setDefaultTimeout(30_000);
