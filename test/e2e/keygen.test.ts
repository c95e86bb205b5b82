/**
 * `vigil keygen --out PREFIX` (issue 14, Keys): an Ed25519 pair, PREFIX.key (PKCS#8 PEM, 0600) and
 * PREFIX.pub (SPKI PEM), and the key id on stdout: the lowercase hex SHA-256 of the SPKI DER,
 * recomputed here with node:crypto. Existing files are never overwritten; a missing directory is
 * never created. Against the compiled binary.
 */
import { describe, expect, test } from "bun:test";
import { createHash, createPrivateKey, createPublicKey, sign, verify } from "node:crypto";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { tmpDir } from "../helpers/fixture.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

function scratch(): string {
  const t = tmpDir("vigil-keygen");
  cleanups.add(() => t.cleanup());
  return t.path;
}

describe("vigil keygen", () => {
  test("writes a 0600 PKCS#8 key and an SPKI public key, and prints the key id", async () => {
    const prefix = `${scratch()}/signer`;
    const run = await runVigil(["keygen", "--out", prefix]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    expect(run.stderr.trimEnd().split("\n")).toEqual([
      `vigil: keygen: wrote ${prefix}.key (private, 0600: wrap --signing-key) and ${prefix}.pub (public: verify --public-key)`,
    ]);

    expect(statSync(`${prefix}.key`).mode & 0o777).toBe(0o600);
    const keyPem = readFileSync(`${prefix}.key`, "utf8");
    const pubPem = readFileSync(`${prefix}.pub`, "utf8");
    expect(keyPem).toStartWith("-----BEGIN PRIVATE KEY-----\n");
    expect(pubPem).toStartWith("-----BEGIN PUBLIC KEY-----\n");
    const priv = createPrivateKey({ key: keyPem, format: "pem" });
    const pub = createPublicKey({ key: pubPem, format: "pem" });
    expect([priv.asymmetricKeyType, pub.asymmetricKeyType]).toEqual(["ed25519", "ed25519"]);

    const spki = pub.export({ type: "spki", format: "der" });
    expect(run.stdout.trim()).toBe(createHash("sha256").update(spki).digest("hex"));
    // The two files are one pair.
    const sig = sign(null, Buffer.from("pair"), priv);
    expect(verify(null, Buffer.from("pair"), pub, sig)).toBe(true);
    // The private key file holds nothing but the PEM (no passphrase, no second key).
    expect(keyPem.trimEnd().split("\n").at(-1)).toBe("-----END PRIVATE KEY-----");
  });

  test("two runs make two different keys", async () => {
    const dir = scratch();
    const a = await runVigil(["keygen", "--out", `${dir}/a`]);
    const b = await runVigil(["keygen", "--out", `${dir}/b`]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.stdout).not.toBe(b.stdout);
  });

  test("refuses to overwrite either file, and leaves them as they were", async () => {
    const dir = scratch();
    const first = await runVigil(["keygen", "--out", `${dir}/k`]);
    expect(first.code).toBe(0);
    const before = [readFileSync(`${dir}/k.key`), readFileSync(`${dir}/k.pub`)];
    const again = await runVigil(["keygen", "--out", `${dir}/k`]);
    expect({ code: again.code, stdout: again.stdout }).toEqual({ code: 2, stdout: "" });
    expect(again.stderr).toBe(`vigil: keygen: cannot create ${dir}/k.key: it already exists (keygen never overwrites a key: choose another --out, or remove the old pair)\n`);
    expect([readFileSync(`${dir}/k.key`), readFileSync(`${dir}/k.pub`)]).toEqual(before);

    // Only the public file exists: it stays, and no private key is left behind either.
    writeFileSync(`${dir}/p.pub`, "mine\n");
    const pubTaken = await runVigil(["keygen", "--out", `${dir}/p`]);
    expect({ code: pubTaken.code, stdout: pubTaken.stdout }).toEqual({ code: 2, stdout: "" });
    expect(pubTaken.stderr).toBe(`vigil: keygen: cannot create ${dir}/p.pub: it already exists (keygen never overwrites a key: choose another --out, or remove the old pair)\n`);
    expect(readFileSync(`${dir}/p.pub`, "utf8")).toBe("mine\n");
    expect(existsSync(`${dir}/p.key`)).toBe(false);
  });

  test("a missing directory is a usage error, not created", async () => {
    const dir = scratch();
    const run = await runVigil(["keygen", "--out", `${dir}/nope/k`]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: "" });
    expect(run.stderr).toBe(`vigil: keygen: directory ${dir}/nope does not exist (it is never created)\n`);
    expect(existsSync(`${dir}/nope`)).toBe(false);
  });
});
