/**
 * Everything `vigil serve` can refuse at start, loaded in one order by one function: the start
 * (app.ts) and `--check-config` (check-config.ts) share it, so the check cannot pass a config the
 * start would refuse, nor the other way round. It starts nothing: no MCP server, no model request,
 * no listener. The only difference is the state dir: the start creates it when missing
 * (`ensureStateDir`), the check only judges it (`inspectStateDir`, which creates nothing).
 */
import { loadSigningKey } from "../evidence/keys.ts";
import type { Signer } from "../evidence/dsse.ts";
import { type LoadedPolicy, loadPolicyFile } from "../policy/load.ts";
import type { Env } from "./config/env.ts";
import { loadServeConfig, resolveConfigPath } from "./config/load.ts";
import type { ServeConfig } from "./config/schema.ts";
import { type ServeTuning, loadServeTuning } from "./config/tuning.ts";
import { createRunModel } from "./models/registry.ts";
import type { RunModel } from "./models/types.ts";
import { ensureStateDir, resolveStateDir } from "./state/paths.ts";

export interface Refusables {
  /** The config file loaded (absolute). */
  configPath: string;
  config: ServeConfig;
  tuning: ServeTuning;
  /** The state dir's absolute path. */
  stateDir: string;
  policy: LoadedPolicy | null;
  model: RunModel;
  signer: Signer | null;
}

export interface RefusablesOptions {
  /** `--config` (undefined: `$VIGIL_CONFIG`, then ./vigil.json). */
  config?: string | undefined;
  /** `--state-dir` (undefined: XDG default). */
  stateDir?: string | undefined;
}

/**
 * Loads, in order, config, tuning knobs, signing key, state dir, policy and model; throws the
 * first refusal (a VigilError, exit 2). `prepareStateDir` gets the resolved state dir and returns
 * its absolute path: `ensureStateDir` (the default) creates it, the check passes one that only looks.
 */
export async function loadRefusables(options: RefusablesOptions, env: Env, prepareStateDir: (dir: string) => string = ensureStateDir): Promise<Refusables> {
  const configPath = resolveConfigPath(options.config, env);
  const config = await loadServeConfig(configPath, env);
  const tuning = loadServeTuning(env);
  // Read once, kept in memory only, never handed to a child: before anything is started.
  const signingKey = config.evidence?.signing_key;
  const signer = signingKey === undefined ? null : loadSigningKey(signingKey);
  const stateDir = prepareStateDir(resolveStateDir(options.stateDir, env));
  const policy = config.policy === undefined ? null : await loadPolicyFile(config.policy);
  // A client object only: the first request is a run's.
  const model = createRunModel(config.model, { env });
  return { configPath, config, tuning, stateDir, policy, model, signer };
}
