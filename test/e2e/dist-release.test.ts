/**
 * scripts/release.sh in a throwaway git repository whose Makefile stands in for the real one
 * (`make check` and `make dist` only record that they ran and write fake binaries), so the gate
 * logic — clean tree, tag on HEAD equal to package.json's version, tests before build — is checked
 * without compiling anything.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { INSTALL_SCRIPT, RELEASE_SCRIPT, hostTarget, run, tmp } from "./dist-fixture.ts";

const TARGETS = ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl", "darwin-x64", "darwin-arm64"];

const HOST = hostTarget();

/** printf format of a fake binary: a script printing the version, tagged with its target (%s). */
const FAKE_BINARY = "#!/bin/sh\\n# %s\\necho 0.1.0\\n";

// $(CALLS) records the calls; FAIL_CHECK fails the tests; TESTED_AS makes make check's dist/vigil
// stand for another target (so it differs from the release binary for this machine).
const FAKE_MAKEFILE = `# stand-in for the real Makefile
.PHONY: check dist
check:
\t@echo check >> $(CALLS)
\t@test -z "$(FAIL_CHECK)"
\t@mkdir -p dist && printf '${FAKE_BINARY}' '$(or $(TESTED_AS),@HOST@)' > dist/vigil && chmod +x dist/vigil
dist:
\t@echo "dist $(DIST_DIR)" >> $(CALLS)
\t@mkdir -p $(DIST_DIR)
\t@cd $(DIST_DIR) && for t in ${TARGETS.join(" ")}; do printf '${FAKE_BINARY}' "$$t" > vigil-$$t; chmod +x vigil-$$t; done && sha256sum vigil-* > SHA256SUMS
`.replace("@HOST@", HOST ?? "none");

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function git(repo: string, ...args: string[]) {
  const r = await run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", ...args], {
    cwd: repo,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, GIT_CONFIG_NOSYSTEM: "1" },
  });
  if (r.code !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}

/** A committed repo with package.json at `version`, the real release/install scripts and the fake Makefile. */
async function repo(version = "0.1.0"): Promise<{ repo: string; calls: string }> {
  const dir = tmp("release");
  dirs.push(dir);
  const repo = join(dir, "repo");
  mkdirSync(join(repo, "scripts"), { recursive: true });
  writeFileSync(join(repo, "package.json"), `{\n  "name": "vigil",\n  "version": "${version}",\n  "dependencies": { "x": "1.0.0" }\n}\n`);
  writeFileSync(join(repo, "Makefile"), FAKE_MAKEFILE);
  writeFileSync(join(repo, ".gitignore"), "dist/\n");
  copyFileSync(RELEASE_SCRIPT, join(repo, "scripts/release.sh"));
  copyFileSync(INSTALL_SCRIPT, join(repo, "scripts/install.sh"));
  await git(repo, "init", "-q", "-b", "main");
  await git(repo, "add", "-A");
  await git(repo, "commit", "-q", "-m", "init");
  return { repo, calls: join(dir, "calls.log") };
}

function release(r: { repo: string; calls: string }, args: string[] = [], extraEnv: Record<string, string> = {}) {
  return run(["sh", "scripts/release.sh", ...args], {
    cwd: r.repo,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CALLS: r.calls, GIT_CONFIG_NOSYSTEM: "1", ...extraEnv },
  });
}

const calls = (r: { calls: string }) => (existsSync(r.calls) ? readFileSync(r.calls, "utf8").trim().split("\n") : []);

describe("scripts/release.sh", () => {
  test("a clean tree tagged with package.json's version: tests, then every target, then the layout", async () => {
    const r = await repo();
    await git(r.repo, "tag", "v0.1.0");
    const res = await release(r);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(calls(r)).toEqual(["check", "dist dist/release/v0.1.0"]);
    const out = join(r.repo, "dist/release");
    expect(readlinkSync(join(out, "latest"))).toBe("v0.1.0");
    expect(readFileSync(join(out, "install.sh"), "utf8")).toBe(readFileSync(INSTALL_SCRIPT, "utf8"));
    expect(res.stdout).toContain("release v0.1.0 ready in dist/release");
    if (HOST) expect(res.stdout).toContain(`vigil-${HOST} is byte-identical to dist/vigil`);
  });

  test("a release binary for this machine that is not the tested dist/vigil is refused", async () => {
    if (!HOST || HOST.startsWith("darwin")) return;
    const r = await repo();
    await git(r.repo, "tag", "v0.1.0");
    const res = await release(r, [], { TESTED_AS: "something-else" });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`vigil-${HOST} differs from dist/vigil, the binary the test suites ran against`);
    expect(existsSync(join(r.repo, "dist/release/latest"))).toBe(false);
  });

  test("an explicit tag argument is accepted when it is on HEAD and matches", async () => {
    const r = await repo();
    await git(r.repo, "tag", "v0.1.0");
    const res = await release(r, ["v0.1.0"]);
    expect(res.code).toBe(0);
  });

  test("a dirty tree is refused before anything runs (modified or untracked)", async () => {
    const r = await repo();
    await git(r.repo, "tag", "v0.1.0");
    writeFileSync(join(r.repo, "notes.txt"), "untracked\n");
    let res = await release(r);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("?? notes.txt");
    expect(res.stderr).toContain("the working tree is not clean");
    rmSync(join(r.repo, "notes.txt"));
    writeFileSync(join(r.repo, "Makefile"), `${FAKE_MAKEFILE}# edited\n`);
    res = await release(r);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("M Makefile");
    expect(calls(r)).toEqual([]);
  });

  test("a tag that differs from package.json's version is refused", async () => {
    const r = await repo("0.2.0");
    await git(r.repo, "tag", "v0.1.0");
    const res = await release(r);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("tag v0.1.0 does not match package.json's version 0.2.0 (expected v0.2.0)");
    expect(calls(r)).toEqual([]);
  });

  test("no tag on HEAD, a missing tag, or a tag on another commit is refused", async () => {
    const r = await repo();
    let res = await release(r);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("HEAD carries no v* tag");
    res = await release(r, ["v0.1.0"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("no tag v0.1.0");
    await git(r.repo, "tag", "v0.1.0");
    writeFileSync(join(r.repo, "later.txt"), "x\n");
    await git(r.repo, "add", "-A");
    await git(r.repo, "commit", "-q", "-m", "later");
    res = await release(r, ["v0.1.0"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("tag v0.1.0 does not point at HEAD");
    expect(calls(r)).toEqual([]);
  });

  test("failing tests stop the release before anything is built", async () => {
    const r = await repo();
    await git(r.repo, "tag", "v0.1.0");
    const res = await release(r, [], { FAIL_CHECK: "1" });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("make check failed; no release was built");
    expect(calls(r)).toEqual(["check"]);
    expect(existsSync(join(r.repo, "dist/release"))).toBe(false);
  });
});
