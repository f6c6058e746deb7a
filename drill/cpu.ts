// CPU time of each process of the cluster, from /proc/<pid>/stat: user + system time of the process
// and of every descendant still running, plus what its reaped children used (cutime + cstime). For
// Postgres that is the postmaster and all its backends, those that exited included. A process killed
// mid-drop keeps what it used until its last reading (the fault runner reads just before the kill);
// one started during the drop (the Temporal server after its restart) counts from zero.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { ClusterProcess, ProcessKind } from '../dev/cluster';

interface ProcStat {
  ppid: number;
  /** utime + stime + cutime + cstime, in clock ticks. */
  ticks: number;
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** Fields after the command name (which may hold spaces and parentheses): state is [0], ppid [1], utime [11]. */
function parseStat(text: string): ProcStat | undefined {
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  if (rest.length < 15) return undefined;
  const n = (i: number) => Number(rest[i]);
  return { ppid: n(1), ticks: n(11) + n(12) + n(13) + n(14) };
}

function readAll(): Map<number, ProcStat> {
  const all = new Map<number, ProcStat>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = parseStat(fs.readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (stat) all.set(Number(entry), stat);
    } catch {
      // exited while we looked
    }
  }
  return all;
}

/** Whether CPU can be read here (Linux with /proc). */
export function canMeterCpu(): boolean {
  return fs.existsSync('/proc/self/stat');
}

interface Tracked {
  name: string;
  kind: ProcessKind;
  /** Seconds at the start of the window (0 for a process first seen after it). */
  from: number;
  last: number;
}

export class CpuMeter {
  private readonly tracked = new Map<number, Tracked>();
  private began = false;

  constructor(private readonly processes: () => ClusterProcess[]) {}

  /** Reads every process now. Cheap enough for once a second (one pass over /proc). */
  sample(): void {
    if (!canMeterCpu()) return;
    const all = readAll();
    const children = new Map<number, number[]>();
    for (const [pid, s] of all) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
    const treeTicks = (pid: number): number => {
      let sum = 0;
      const stack = [pid];
      while (stack.length) {
        const p = stack.pop()!;
        sum += all.get(p)?.ticks ?? 0;
        stack.push(...(children.get(p) ?? []));
      }
      return sum;
    };
    for (const p of this.processes()) {
      if (!all.has(p.pid)) continue;
      const seconds = treeTicks(p.pid) / clockTicks();
      const t = this.tracked.get(p.pid);
      if (t) t.last = Math.max(t.last, seconds);
      else this.tracked.set(p.pid, { name: p.name, kind: p.kind, from: this.began ? 0 : seconds, last: seconds });
    }
  }

  /** From now on: what each process used so far is left out. */
  begin(): void {
    this.sample();
    for (const t of this.tracked.values()) t.from = t.last;
    this.began = true;
  }

  /** CPU-seconds per kind since begin(), with the processes that used them. */
  totals(): Map<ProcessKind, { seconds: number; processes: string[] }> {
    this.sample();
    const out = new Map<ProcessKind, { seconds: number; processes: string[] }>();
    for (const t of this.tracked.values()) {
      const row = out.get(t.kind) ?? { seconds: 0, processes: [] };
      row.seconds += t.last - t.from;
      if (!row.processes.includes(t.name)) row.processes.push(t.name);
      out.set(t.kind, row);
    }
    return out;
  }
}
