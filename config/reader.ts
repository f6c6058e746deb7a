// The reading of one process's environment: every problem collected before failing, so one run names them all.
import { devSecretProblems } from './dev-secrets';

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

/** Collects every problem of one environment before failing, so one run names them all. */
export class Reader {
  readonly problems: string[] = [];
  constructor(readonly env: Env) {}

  need(name: string, why: string): string {
    const v = this.env[name];
    if (!v) this.problems.push(`${name} is required (${why})`);
    return v ?? '';
  }

  text(name: string, dflt: string): string {
    return this.env[name] || dflt;
  }

  int(name: string, dflt: number, min: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) this.problems.push(`${name} must be an integer >= ${min}, got "${raw}"`);
    return n;
  }

  /** A TCP port to listen on: 0 (any free port) to 65535. */
  port(name: string, dflt: number): number {
    const n = this.int(name, dflt, 0);
    if (Number.isInteger(n) && n > 65_535) this.problems.push(`${name} must be a TCP port (0 to 65535), got "${n}"`);
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
