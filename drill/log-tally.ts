// The lines and bytes each kind of process logs during a drop (issue 31, item 2: log volume per
// purchase and per buyer), at the level the processes run at (LOG_LEVEL, `info` unless the drill's
// environment sets it). Fed every output line of the processes the drill started, `[api-1] {...}`.
import type { ProcessKind } from '../dev/cluster';

export interface LogVolume {
  kind: string;
  lines: number;
  bytes: number;
}

/** `[api-2] …` → `api`; a line of no named process is `other`. */
function kindOf(line: string): { kind: ProcessKind | 'other'; prefix: number } {
  const m = /^\[([a-z]+)(?:-\d+)?\] /.exec(line);
  return m ? { kind: m[1] as ProcessKind, prefix: m[0].length } : { kind: 'other', prefix: 0 };
}

export class LogTally {
  private readonly counts = new Map<string, { lines: number; bytes: number }>();
  private from = new Map<string, { lines: number; bytes: number }>();

  /** One line as the launcher hands it over, prefix and all; its bytes as written, with the newline. */
  line(text: string): void {
    const { kind, prefix } = kindOf(text);
    const c = this.counts.get(kind) ?? { lines: 0, bytes: 0 };
    c.lines += 1;
    c.bytes += Buffer.byteLength(text) - prefix + 1;
    this.counts.set(kind, c);
  }

  /** From now on: what was logged so far is left out. */
  begin(): void {
    this.from = new Map([...this.counts].map(([k, c]) => [k, { ...c }]));
  }

  /** Lines and bytes per kind since begin(). */
  since(): LogVolume[] {
    return [...this.counts]
      .map(([kind, c]) => {
        const was = this.from.get(kind) ?? { lines: 0, bytes: 0 };
        return { kind, lines: c.lines - was.lines, bytes: c.bytes - was.bytes };
      })
      .filter((v) => v.lines > 0);
  }
}
