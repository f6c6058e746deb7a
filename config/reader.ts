// The reading of one process's environment: every problem collected before failing, so one run names them all.

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

  done<T>(config: T): T {
    if (this.problems.length) {
      throw new ConfigError(`invalid configuration:\n  - ${this.problems.join('\n  - ')}`);
    }
    return config;
  }
}
