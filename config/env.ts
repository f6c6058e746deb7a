// The environment a process's configuration is read from: process.env, or a test's own. Its own
// module so that config/dev-secrets.ts, which config/reader.ts calls, need not import the reader.

export type Env = Record<string, string | undefined>;
