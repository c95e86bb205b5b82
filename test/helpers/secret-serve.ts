/**
 * The serve set-up of the e2e tests that look for secrets in what vigil writes
 * (serve-secret-scrub, log-format-json): three secrets vigil holds for others, each handed to where
 * it belongs, so a test can show it got there and appears nowhere else.
 *
 * - the HTTP events fixture as MCP server `tickets`, its Authorization header `Bearer ${TICKETS_TOKEN}`
 *   (the header secret, expanded from the environment); the fixture also knows the model's key, as
 *   an operator's shared environment would (`ECHO_MODEL_KEY`: a tool can echo it back);
 * - the stdio events fixture as `local`, the stdio secret in its env (`LOCAL_TOKEN`);
 * - the mock model behind `api_key_env` MODEL_KEY_ENV (it answers 401 to any other key).
 */
import { writeFileSync } from "node:fs";
import { type MockModel, startMockModel } from "../fixtures/mock-model.ts";
import { vigilEnv } from "./bin.ts";
import type { Cleanups } from "./cleanups.ts";
import { type EventsFixture, type EventsFixtureEnv, eventsFixtureStdio, startEventsFixture } from "./events-fixture.ts";
import { type EventsEnv, FAST_KNOBS } from "./events-serve.ts";
import { tmpDir } from "./fixture.ts";

/** The variable the config's `model.api_key_env` names. */
export const MODEL_KEY_ENV = "HELD_MODEL_KEY";

export interface HeldSecrets {
  header: string;
  model: string;
  stdio: string;
}

export interface SecretServeOptions {
  prefix: string;
  secrets: HeldSecrets;
  /** The `events` of `tickets` (undefined: no `events` member). */
  events?: Record<string, unknown>[];
  /** More environment for vigil (knobs). */
  knobs?: Record<string, string>;
  /** Replaces the whole config (the fixtures and the model start all the same). */
  config?: Record<string, unknown>;
}

export interface SecretServe {
  env: EventsEnv;
  fixture: EventsFixture;
  model: MockModel;
}

export async function secretServeEnvironment(cleanups: Cleanups, o: SecretServeOptions): Promise<SecretServe> {
  const tmp = tmpDir(o.prefix);
  cleanups.add(() => tmp.cleanup());
  const model = await startMockModel({ apiKey: o.secrets.model });
  cleanups.add(() => model.close());
  const fixture = await startEventsFixture({ cleanups, env: { ECHO_MODEL_KEY: o.secrets.model } as EventsFixtureEnv });
  const local = eventsFixtureStdio({ cleanups });
  const configFile = tmp.file("vigil.json");
  const config = o.config ?? {
    model: { provider: "openai", base_url: model.url, model: "mock-model", api_key_env: MODEL_KEY_ENV, timeout_ms: 20_000 },
    mcp_servers: [
      {
        name: "tickets", transport: "http", url: fixture.mcpUrl,
        headers: { Authorization: "Bearer ${TICKETS_TOKEN}" },
        ...(o.events === undefined ? {} : { events: o.events }),
      },
      { name: "local", transport: "stdio", command: local.command, args: local.args, env: { ...local.env, LOCAL_TOKEN: o.secrets.stdio } },
    ],
  };
  writeFileSync(configFile, JSON.stringify(config));
  const env: EventsEnv = {
    dir: tmp.path,
    configFile,
    stateDir: tmp.file("state"),
    model,
    fixture,
    env: vigilEnv({ ...FAST_KNOBS, TICKETS_TOKEN: o.secrets.header, [MODEL_KEY_ENV]: o.secrets.model, ...(o.knobs ?? {}) }),
    writeConfig: () => {
      throw new Error("secretServeEnvironment: the config is written once");
    },
  };
  return { env, fixture, model };
}
