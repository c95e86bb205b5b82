/**
 * Every subcommand refuses what it does not know (issue 11 item 12): an unknown flag (with the
 * flag it probably meant), a stray argument, a value flag given twice, `--no-` on a value flag, a
 * switch given both ways — each with one line on stderr, nothing on stdout, and the command's usage
 * exit (2; verify's is 64). What follows `--` is a command line and is never scanned. `--help` and
 * `--version` keep working. Against the compiled binary; the table below is keyed by the command
 * registry, so a new subcommand does not compile without its rows.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import type { commands } from "../../src/commands/index.ts";
import { goldenDir } from "../helpers/capture.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { fixtureArgv, tmpDir } from "../helpers/fixture.ts";
import { type VigilRun, runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

/** A refusal: exit status and the exact stderr (the message line, then the hint line if any). */
type Row = [args: string[], exit: number, stderr: string[]];

/**
 * A usable config and state dir, so a flag that is *not* refused would start serve for real
 * (stdin is closed: stdio mode ends at once with 0) instead of failing on a missing config.
 */
function serveArgs(): string[] {
  const tmp = tmpDir("vigil-cli-flags");
  cleanups.add(() => tmp.cleanup());
  const config = tmp.file("vigil.json");
  writeFileSync(config, JSON.stringify({ model: { provider: "command", command: ["cat"], timeout_ms: 5000 } }));
  return ["--config", config, "--state-dir", tmp.file("state")];
}

function expectRefused(run: VigilRun, [args, exit, stderr]: Row): void {
  const shown = `vigil ${args.join(" ")}`;
  expect({ shown, code: run.code, stdout: run.stdout, stderr: run.stderr.trimEnd().split("\n") }).toEqual({ shown, code: exit, stdout: "", stderr });
}

async function expectRows(rows: Row[], extra: string[] = []): Promise<void> {
  for (const row of rows) expectRefused(await runVigil([...row[0], ...extra]), row);
}

async function expectHelp(args: string[], usage: string): Promise<void> {
  const run = await runVigil(args);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
  expect(run.stdout).toContain(`USAGE ${usage}`);
}

const PIN_HINT = "vigil: hint: usage: vigil policy pin -- CMD [ARGS…]";
const KEYGEN_HINT = "vigil: hint: usage: vigil keygen --out PREFIX";
const VERIFY_HINT = "vigil: hint: usage: vigil verify DIR [--json] [--require-receipts] [--public-key FILE]... [--trusted-keys DIR]";

/** One entry per subcommand of the registry (src/commands/index.ts). */
const SUBCOMMANDS: Record<keyof typeof commands, () => Promise<void>> = {
  async wrap() {
    const cmd = ["--", "sh", "-c", "exit 7"];
    await expectRows([
      [["wrap", "--polcy", "p.yaml", ...cmd], 2, ["vigil: wrap: unknown flag --polcy (did you mean --policy?)"]],
      [["wrap", "--allow-all", "-x", ...cmd], 2, ["vigil: wrap: unknown flag -x"]],
      [["wrap", "--allow-all", "stray", ...cmd], 2, ['vigil: wrap: unexpected argument "stray" before \'--\'']],
      [["wrap", "--no-policy", "p.yaml", ...cmd], 2, ["vigil: wrap: unknown flag --no-policy"]],
      [["wrap", "--allow-all", "--no-allow-all", ...cmd], 2, ["vigil: wrap: --allow-all and --no-allow-all given together"]],
      [["wrap", "--allow-all=yes", ...cmd], 2, ["vigil: wrap: --allow-all takes no value"]],
      [["wrap", "--policy", "a.yaml", "--policy=b.yaml", ...cmd], 2, ["vigil: wrap: --policy given twice"]],
    ]);
    // `--no-` of a switch is accepted; after `--` nothing is vigil's, not even `--help`: the
    // server runs (and vigil exits with its status).
    expect((await runVigil(["wrap", "--allow-all", "--no-dry-run", ...cmd])).code).toBe(7);
    expect((await runVigil(["wrap", "--allow-all", ...cmd, "--help"])).code).toBe(7);
    expect((await runVigil(["wrap", "--allow-all", ...cmd, "--bogus", "-h"])).code).toBe(7);
    await expectHelp(["wrap", "--help"], "vigil wrap [OPTIONS]");
  },

  async verify() {
    const dir = goldenDir("clean");
    await expectRows([
      [["verify", "--jsn", dir], 64, ["vigil: verify: unknown flag --jsn (did you mean --json?)", VERIFY_HINT]],
      [["verify", "-j", dir], 64, ["vigil: verify: unknown flag -j (did you mean --json?)", VERIFY_HINT]],
      [["verify", "--json", "--no-json", dir], 64, ["vigil: verify: --json and --no-json given together", VERIFY_HINT]],
      [["verify", dir, dir], 64, ["vigil: verify: one DIR only", VERIFY_HINT]],
      [["verify", dir, "--public-key"], 64, ["vigil: verify: --public-key needs a value", VERIFY_HINT]],
      [["verify", dir, "--trusted-keys", "a", "--trusted-keys=b"], 64, ["vigil: verify: --trusted-keys given twice", VERIFY_HINT]],
      [["verify", dir, "--public-keys", "a.pub"], 64, ["vigil: verify: unknown flag --public-keys (did you mean --public-key?)", VERIFY_HINT]],
    ]);
    expect((await runVigil(["verify", "--no-json", dir])).code).toBe(0);
    await expectHelp(["verify", "-h"], "vigil verify [OPTIONS] [DIR]");
  },

  async serve() {
    const usable = serveArgs();
    await expectRows(
      [
        [["serve", "--lisen", "127.0.0.1:0"], 2, ["vigil: serve: unknown flag --lisen (did you mean --listen?)"]],
        // No guess: --listen and --log-format both extend "l" (shared/flags.ts closestName).
        [["serve", "-l", "127.0.0.1:0"], 2, ["vigil: serve: unknown flag -l"]],
        [["serve", "stray"], 2, ['vigil: serve: unexpected argument "stray" (serve takes flags only; see vigil serve --help)']],
        [["serve", "--"], 2, ['vigil: serve: unexpected argument "--" (serve takes flags only; see vigil serve --help)']],
        [["serve", "--no-listen"], 2, ["vigil: serve: unknown flag --no-listen"]],
        [["serve", "--session", "a", "--session=b"], 2, ["vigil: serve: --session given twice"]],
        [["serve", "--mcp-events-reapable=no"], 2, ["vigil: serve: --mcp-events-reapable takes no value"]],
        [["serve", "--mcp-events-reapable", "--no-mcp-events-reapable"], 2, ["vigil: serve: --mcp-events-reapable and --no-mcp-events-reapable given together"]],
      ],
      usable,
    );
    // The negation of a switch is accepted (stdin is closed: stdio mode ends with 0).
    const run = await runVigil(["serve", ...usable, "--no-mcp-events-reapable"]);
    expect({ code: run.code, stderr: run.stderr }).toMatchObject({ code: 0, stderr: expect.stringContaining("serve: model=command:cat") });
    await expectHelp(["serve", "--help"], "vigil serve [OPTIONS]");
  },

  async policy() {
    await expectRows([
      [["policy", "--bogus"], 2, ["vigil: policy: unknown flag --bogus (see vigil policy --help)"]],
      [["policy", "chek", "p.yaml"], 2, ['vigil: policy: unknown command "chek" (did you mean check? commands: check, pin; see vigil policy --help)']],
      // policy check
      [["policy", "check", "--strict", "p.yaml"], 2, ["vigil: policy check: unknown flag --strict"]],
      [["policy", "check", "a.yaml", "b.yaml"], 2, ['vigil: policy check: unexpected argument "b.yaml" (one FILE only)']],
      [["policy", "check"], 2, ["vigil: policy check: missing FILE", "vigil: hint: usage: vigil policy check FILE"]],
      // policy pin
      [["policy", "pin", "--timeout", "5", "--", "true"], 2, ["vigil: policy pin: unknown flag --timeout"]],
      [["policy", "pin", "stray", "--", "true"], 2, ['vigil: policy pin: unexpected argument "stray" before \'--\'']],
      [["policy", "pin"], 2, ["vigil: policy pin: missing server command", PIN_HINT]],
    ]);
    // What follows `--` is the server's command line, `--help` included: the server is pinned.
    const pin = await runVigil(["policy", "pin", "--", ...fixtureArgv(), "--help"]);
    expect({ code: pin.code, pins: pin.stdout.startsWith("pins:") }).toEqual({ code: 0, pins: true });
    await expectHelp(["policy", "--help"], "vigil policy check|pin");
    await expectHelp(["policy", "check", "--help"], "policy check [OPTIONS] <FILE>");
    await expectHelp(["policy", "pin", "--help"], "policy pin");
    // A group named without its subcommand prints its usage and exits 2.
    const bare = await runVigil(["policy"]);
    expect({ code: bare.code, usage: bare.stdout.includes("USAGE vigil policy check|pin") }).toEqual({ code: 2, usage: true });
  },

  async keygen() {
    await expectRows([
      [["keygen", "--outt", "k"], 2, ["vigil: keygen: unknown flag --outt (did you mean --out?)"]],
      [["keygen", "stray"], 2, ['vigil: keygen: unexpected argument "stray"', KEYGEN_HINT]],
      [["keygen", "--out", "a", "--out=b"], 2, ["vigil: keygen: --out given twice"]],
      [["keygen", "--no-out"], 2, ["vigil: keygen: unknown flag --no-out"]],
      [["keygen"], 2, ["vigil: keygen: missing --out PREFIX", KEYGEN_HINT]],
    ]);
    await expectHelp(["keygen", "--help"], "vigil keygen [OPTIONS]");
  },
};

describe("every subcommand refuses unknown flags and stray arguments with one line", () => {
  for (const [name, check] of Object.entries(SUBCOMMANDS)) test(name, check, 60_000);

  test("vigil itself: unknown flags and commands; --help and --version", async () => {
    await expectRows([
      [["--bogus"], 2, ["vigil: unknown flag --bogus (see vigil --help)"]],
      [["--verison"], 2, ["vigil: unknown flag --verison (did you mean --version?)"]],
      [["--config", "x", "serve"], 2, ["vigil: unknown flag --config (see vigil --help)"]],
      [["nosuchcommand"], 2, ['vigil: unknown command "nosuchcommand" (commands: wrap, verify, policy, serve, keygen; see vigil --help)']],
      [["serv"], 2, ['vigil: unknown command "serv" (did you mean serve? commands: wrap, verify, policy, serve, keygen; see vigil --help)']],
    ]);
    await expectHelp(["--help"], "vigil wrap|verify|policy|serve|keygen");
    const version = await runVigil(["--version"]);
    expect({ code: version.code, stderr: version.stderr }).toEqual({ code: 0, stderr: "" });
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\S*\n$/);
    const bare = await runVigil([]);
    expect({ code: bare.code, usage: bare.stdout.includes("USAGE vigil wrap|verify|policy|serve|keygen") }).toEqual({ code: 2, usage: true });
  });
});
