import { statSync } from "node:fs";
import { dirname } from "node:path";
import { defineCommand } from "citty";
import { generateKeyPair } from "../evidence/keys.ts";
import { usageError } from "../shared/errors.ts";
import { type FlagTable, flagRefusal, scanFlags } from "../shared/flags.ts";
import { logLine } from "../shared/log.ts";
import { writeStdout } from "../shared/output.ts";

const USAGE = "usage: vigil keygen --out PREFIX";

// keygen's one flag table: citty renders --help from it, parseKeygenArgs scans against it.
const KEYGEN_FLAGS = {
  out: { type: "string", description: "Required: write PREFIX.key (private, 0600) and PREFIX.pub (public); neither may exist", valueHint: "PREFIX" },
} as const satisfies FlagTable;

/** `keygen --out PREFIX`: the prefix, whose directory must exist (it is never created). */
export function parseKeygenArgs(rawArgs: readonly string[]): string {
  const values = scanFlags(KEYGEN_FLAGS, rawArgs, {
    positional: (arg) => {
      throw usageError(`keygen: unexpected argument ${JSON.stringify(arg)}`, USAGE);
    },
    refuse: (problem) => usageError(flagRefusal("keygen", problem)),
  });
  const prefix = values.out;
  if (prefix === undefined) throw usageError("keygen: missing --out PREFIX", USAGE);
  if (prefix.endsWith("/")) throw usageError(`keygen: --out ${prefix} names a directory; give a file prefix such as ${prefix}vigil`);
  const dir = dirname(prefix);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // reported below
  }
  if (!isDir) throw usageError(`keygen: directory ${dir} does not exist (it is never created)`);
  return prefix;
}

export default defineCommand({
  meta: { name: "keygen", description: "Create an Ed25519 signing key pair and print its key id" },
  args: KEYGEN_FLAGS,
  run: async ({ rawArgs }) => {
    const key = generateKeyPair(parseKeygenArgs(rawArgs));
    // The key id on stdout (scripts read it); where the files went on stderr.
    writeStdout(key.keyid);
    logLine(`keygen: wrote ${key.keyPath} (private, 0600: wrap --signing-key) and ${key.pubPath} (public: verify --public-key)`);
    return 0;
  },
});
