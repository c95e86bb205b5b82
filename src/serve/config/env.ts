/**
 * The environment as serve reads it: the config's `${VAR}` expansion, the tuning knobs and the
 * model's API key all take one (tests pass their own; the default is `process.env`). Its own file
 * so the config loader and the model providers share it without importing each other.
 */
export type Env = Readonly<Record<string, string | undefined>>;
