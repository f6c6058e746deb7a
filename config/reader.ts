// The reading of one process's environment: every problem collected before failing, so one run names them all.
import { devSecretProblems } from './dev-secrets';
import type { Env } from './env';
import { variable, type ConfigProcess, type Variable } from './variables';

export type { Env } from './env';

export class ConfigError extends Error {}

/**
 * Collects every problem of one environment before failing, so one run names them all. Each name is
 * looked up in the configuration table (config/variables): its default and bounds come from there,
 * and reading a variable the table does not list, or does not say this process reads, is a
 * programming error that every test of the loader catches.
 */
export class Reader {
  readonly problems: string[] = [];
  constructor(
    readonly env: Env,
    readonly process: ConfigProcess,
  ) {}

  /** The table's row of a variable this process reads. */
  private row(name: string): Variable {
    const row = variable(name);
    if (!row.readBy.includes(this.process)) {
      throw new Error(
        `${name} is read by the ${this.process}, but config/variables says only ${row.readBy.join(', ')}`,
      );
    }
    return row;
  }

  /** The value as set, or undefined when unset or empty. */
  raw(name: string): string | undefined {
    this.row(name);
    return this.env[name] || undefined;
  }

  need(name: string, why: string): string {
    const v = this.raw(name);
    if (!v) this.problems.push(`${name} is required (${why})`);
    return v ?? '';
  }

  /** A text value, else the table's default (or `computed`, where the table states the default in words). */
  text(name: string, computed?: string): string {
    const row = this.row(name);
    const dflt = computed ?? row.default ?? '';
    if (typeof dflt !== 'string') throw new Error(`${name} has no text default in config/variables`);
    return this.env[name] || dflt;
  }

  /** An integer within the table's bounds, else its default (or `computed`, where the table states it in words). */
  int(name: string, computed?: number): number {
    const row = this.row(name);
    const dflt = computed ?? row.defaultBy?.[this.process] ?? row.default;
    if (typeof dflt !== 'number') throw new Error(`${name} has no integer default in config/variables`);
    const raw = this.env[name];
    if (raw === undefined || raw === '') return dflt;
    // Digits only: Number() reads blanks as 0 (a limit turned off), and takes 0x10 and 1e3.
    const n = /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
    const min = row.min ?? 0;
    if (!Number.isInteger(n) || n < min) this.problems.push(`${name} must be an integer >= ${min}, got "${raw}"`);
    else if (row.max !== undefined && n > row.max) this.problems.push(rangeProblem(name, row, n));
    else if (name.endsWith('_MS') && n > LONGEST_TIMER_MS) {
      // Node's timers take at most this; a longer one (meant as "never") fires after 1 ms.
      this.problems.push(`${name} must be at most ${LONGEST_TIMER_MS} (about 24.8 days), got "${raw}"`);
    }
    return n;
  }

  /** A Postgres connection URL (postgres:// or postgresql://), required. */
  postgresUrl(name: string, why: string): string {
    const v = this.need(name, why);
    if (!v) return v;
    let protocol: string | undefined;
    try {
      protocol = new URL(v).protocol;
    } catch {
      // not a URL at all: named below without echoing it (it may hold a password)
    }
    if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
      this.problems.push(`${name} must be a postgres:// or postgresql:// URL (${why})`);
    }
    return v;
  }

  /** Every loader ends here, so the refusals that hold for any process (config/dev-secrets.ts) are made once, here. */
  done<T>(config: T): T {
    this.problems.push(...devSecretProblems(this.env));
    if (this.problems.length) {
      throw new ConfigError(`invalid configuration:\n  - ${this.problems.join('\n  - ')}`);
    }
    return config;
  }
}

/** The longest delay Node's timers take (2^31 − 1 ms): past it, setTimeout waits 1 ms. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * Whether `url` is an http(s) URL that `fetch` will take: parsed by the WHATWG parser (a space in the
 * host, an unclosed `[`, a port past 65535 are not), with a host. `shape`, if given, must match too.
 */
export function isHttpUrl(url: string, shape?: RegExp): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  return (
    (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.host !== '' && (shape?.test(url) ?? true)
  );
}

/** A TCP port is named as one (0 to 65535); other bounds plainly. */
function rangeProblem(name: string, row: Variable, n: number): string {
  return row.max === 65_535 && row.min === 0
    ? `${name} must be a TCP port (0 to 65535), got "${n}"`
    : `${name} must be at most ${row.max}, got "${n}"`;
}
