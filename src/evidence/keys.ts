/**
 * Ed25519 keys for signed evidence (wrap.md §12): `vigil keygen`, the signing key of wrap and
 * serve, and the public keys `vigil verify` trusts.
 *
 * - A key id is the lowercase hex SHA-256 of the public key's SPKI DER, no prefix: the same string
 *   is a DSSE signature's `keyid`.
 * - The private key is read once, before any child is spawned, parsed into a KeyObject and kept in
 *   memory only. A key file that is not a regular file, is readable or writable by group/others, is
 *   over 64 KiB, or is not an Ed25519 PKCS#8 PEM key is refused with a usage error (exit 2) that
 *   names the file — never its contents.
 */
import { type KeyObject, createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { closeSync, constants, fsyncSync, lstatSync, realpathSync, openSync, opendirSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { readBounded } from "../shared/durable/bounded-file.ts";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
import { type Signer, type TrustedKey, ed25519Signer } from "./dsse.ts";

/** Key files are small; anything larger is not a key. */
export const KEY_FILE_MAX_BYTES = 64 * 1024;
/** `--trusted-keys DIR` reads at most this many `.pub` files. */
export const MAX_TRUSTED_KEYS = 64;

export function keyIdOf(publicKey: KeyObject): string {
  return createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex");
}

const keyError = (message: string, cause?: unknown) =>
  new VigilError("usage", message, cause === undefined ? {} : { cause });

const PUBLIC_PEM = "-----BEGIN PUBLIC KEY-----";
// keygen writes PREFIX.pub next to PREFIX.key: the likeliest wrong file, and 0644, so without this
// the operator would be told to chmod a public key.
const publicKeyGiven = (path: string) =>
  keyError(`signing key ${path}: a public key; give its private key (PREFIX.key from vigil keygen) — the .pub is for verify --public-key`);

/** Whether the file is a PEM public key (only its header is looked at; the bytes are wiped). */
function holdsPublicKey(path: string): boolean {
  const r = readBounded(path, KEY_FILE_MAX_BYTES);
  if (!r.ok) return false;
  const found = r.bytes.includes(PUBLIC_PEM);
  r.bytes.fill(0);
  return found;
}

/** "not an Ed25519 key (its type is ec)": node's type names, no article to get wrong. */
const typeProblem = (type: string | undefined) => `not an Ed25519 key (its type is ${type ?? "not asymmetric"})`;

/** Reads and parses the signing key, or throws a usage error naming the file and what is wrong. */
export function loadSigningKey(path: string): Signer {
  // A link is followed (a Kubernetes secret volume mounts each key as a symlink into ..data/);
  // every check below is of the file it leads to, and that file is what is read.
  let real: string;
  let st: ReturnType<typeof lstatSync>;
  try {
    real = realpathSync(path);
    st = lstatSync(real);
  } catch (e) {
    throw keyError(`signing key ${path}: ${errnoCode(e) === "ENOENT" ? "no such file" : errorMessage(e)}`, e);
  }
  if (!st.isFile()) throw keyError(`signing key ${path}: not a regular file`);
  if ((st.mode & 0o077) !== 0) {
    if (holdsPublicKey(real)) throw publicKeyGiven(path);
    throw keyError(`signing key ${path}: readable or writable by group/others (mode ${(st.mode & 0o777).toString(8).padStart(4, "0")}); chmod 600 it`);
  }
  const r = readBounded(real, KEY_FILE_MAX_BYTES);
  if (!r.ok) throw keyError(`signing key ${path}: ${r.message}`);
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: r.bytes, format: "pem" });
  } catch {
    // The parser's message can quote the input: say what is wrong, never what the file holds.
    if (r.bytes.includes(PUBLIC_PEM)) throw publicKeyGiven(path);
    throw keyError(`signing key ${path}: not a PKCS#8 PEM private key`);
  } finally {
    r.bytes.fill(0);
  }
  if (key.asymmetricKeyType !== "ed25519") throw keyError(`signing key ${path}: ${typeProblem(key.asymmetricKeyType)}; create one with vigil keygen`);
  return ed25519Signer(keyIdOf(createPublicKey(key)), key);
}

/** Reads one SPKI PEM public key (bounded), or throws a usage error. */
export function loadPublicKey(path: string): TrustedKey {
  const r = readBounded(path, KEY_FILE_MAX_BYTES);
  if (!r.ok) throw keyError(`public key ${path}: ${r.problem === "missing" ? "no such file" : r.message}`);
  // createPublicKey also derives a public key from a private one: a verifier must never be handed
  // (and so hold) signing material by mistake.
  if (r.bytes.includes("PRIVATE KEY")) {
    r.bytes.fill(0);
    throw keyError(`public key ${path}: a private key; give its .pub file`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: r.bytes, format: "pem" });
  } catch {
    throw keyError(`public key ${path}: not an SPKI PEM public key`);
  }
  if (key.asymmetricKeyType !== "ed25519") throw keyError(`public key ${path}: ${typeProblem(key.asymmetricKeyType)}`);
  return { keyid: keyIdOf(key), key, file: path };
}

/** Every `*.pub` file of a directory (at most MAX_TRUSTED_KEYS), in name order; a usage error when none. */
export function loadTrustedKeys(dir: string): TrustedKey[] {
  const names: string[] = [];
  let handle: ReturnType<typeof opendirSync>;
  try {
    handle = opendirSync(dir);
  } catch (e) {
    const code = errnoCode(e);
    const why =
      code === "ENOENT" ? "no such directory" : code === "ENOTDIR" ? "not a directory (give the directory holding the .pub files, or --public-key FILE)" : errorMessage(e);
    throw keyError(`trusted keys ${dir}: ${why}`, e);
  }
  try {
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      if (!entry.name.endsWith(".pub")) continue;
      if (names.length >= MAX_TRUSTED_KEYS) throw keyError(`trusted keys ${dir}: more than ${MAX_TRUSTED_KEYS} .pub files`);
      names.push(entry.name);
    }
  } finally {
    handle.closeSync();
  }
  if (names.length === 0) throw keyError(`trusted keys ${dir}: no .pub files`);
  return names.sort().map((n) => loadPublicKey(join(dir, n)));
}

export interface GeneratedKey {
  keyid: string;
  keyPath: string;
  pubPath: string;
}

/**
 * Writes a new Ed25519 pair: `PREFIX.key` (PKCS#8 PEM, created exclusively with mode 0600) and
 * `PREFIX.pub` (SPKI PEM, 0644). Neither may exist; on a failure nothing of ours is left behind.
 */
export function generateKeyPair(prefix: string): GeneratedKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const keyPath = `${prefix}.key`;
  const pubPath = `${prefix}.pub`;
  writeNew(keyPath, privateKey.export({ type: "pkcs8", format: "pem" }) as string, 0o600);
  try {
    writeNew(pubPath, publicKey.export({ type: "spki", format: "pem" }) as string, 0o644);
  } catch (e) {
    try {
      unlinkSync(keyPath);
    } catch {
      // the key file stays; the error below names what failed
    }
    throw e;
  }
  return { keyid: keyIdOf(publicKey), keyPath, pubPath };
}

function writeNew(path: string, text: string, mode: number): void {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  } catch (e) {
    throw keyError(`keygen: cannot create ${path}: ${errnoCode(e) === "EEXIST" ? "it already exists (keygen never overwrites a key: choose another --out, or remove the old pair)" : errorMessage(e)}`, e);
  }
  try {
    // A stricter umask may narrow the mode (a public key that is less readable is still correct); it cannot widen it.
    const bytes = Buffer.from(text);
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try {
      unlinkSync(path);
    } catch {
      // nothing more to undo
    }
    throw keyError(`keygen: cannot write ${path}: ${errorMessage(e)}`, e);
  }
  closeSync(fd);
}
