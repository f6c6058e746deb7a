// The shape of the configuration table's rows (config/variables/index.ts).

/** The processes whose loaders read through config/reader.ts: the table says which read what. */
export type ConfigProcess = 'api' | 'worker' | 'cli';

/** Who else reads variables, straight from the environment. */
export type Tool = 'npm start' | 'launcher' | 'emulator' | 'docker compose' | 'drill' | 'benchmarks' | 'tests';

export type Section = 'service' | 'local' | 'compose' | 'rehearsal';

export interface Variable {
  name: string;
  section: Section;
  readBy: readonly (ConfigProcess | Tool)[];
  /** The parser's default; a number for integers. Undefined when there is none or it is computed. */
  default?: number | string;
  /** A default that differs by process (the pools' timeouts). */
  defaultBy?: Partial<Record<ConfigProcess, number>>;
  /** How the docs state the default, where the value alone would not say it (computed, or npm start's). */
  defaultText?: string;
  /** Bounds of an integer. */
  min?: number;
  max?: number;
  /** What it is for, in one paragraph of Markdown. */
  doc: string;
  /** Listed in the README's short table: what a first deployment sets. */
  essential?: boolean;
  /** A secret: never printed, and refused when it holds a development value beside a live key. */
  secret?: boolean;
  /** In .env.example (docker compose), with this value ('' for empty), under the comment `doc`. */
  example?: string;
}
