// CPU time of each process of the cluster, from /proc/<pid>/stat: user + system time of the process
// and of every descendant still running, plus what its reaped children used (cutime + cstime). For
// Postgres that is the postmaster and all its backends, those that exited included. A process killed
// mid-drop keeps what it used until its last reading (the fault runner reads just before the kill);
// one started during the drop (the Temporal server after its restart) counts from zero.
// Every few readings it also reads each process tree's resident memory, for its peak (memoryPeaks):
// the anonymous memory of every process in the tree plus the largest file-backed and shared part once
// (Postgres's binary and shared buffers are mapped by every backend).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { ClusterProcess, ProcessKind } from '../dev/cluster';

interface ProcStat {
  ppid: number;
  /** utime + stime + cutime + cstime, in clock ticks. */
  ticks: number;
}

/** Memory is read every this many CPU readings (a pass over each tree's /proc/<pid>/status). */
const MEMORY_EVERY = 5;

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
  /** The tree's largest resident memory seen since begin(), bytes. */
  peakBytes: number;
}

/**
 * RssAnon (the process's own) and RssFile + RssShmem (the binary, its libraries and shared memory, which
 * the processes of a tree share) of one process, bytes; zeros once it is gone.
 */
function memoryOf(pid: number): { own: number; shared: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0) * 1024;
    return { own: kb('RssAnon'), shared: kb('RssFile') + kb('RssShmem') };
  } catch {
    return { own: 0, shared: 0 };
  }
}

/** A tree's resident memory: every process's own, plus the largest shared part once. */
function treeMemory(pids: number[]): number {
  let own = 0;
  let shared = 0;
  for (const pid of pids) {
    const m = memoryOf(pid);
    own += m.own;
    shared = Math.max(shared, m.shared);
  }
  return own + shared;
}

export interface MemoryPeak {
  kind: ProcessKind;
  name: string;
  peakMb: number;
}

export class CpuMeter {
  private readonly tracked = new Map<number, Tracked>();
  private began = false;
  private readings = 0;

  constructor(private readonly processes: () => ClusterProcess[]) {}

  /** Reads every process now. Cheap enough for once a second (one pass over /proc). */
  sample(): void {
    if (!canMeterCpu()) return;
    const all = readAll();
    const children = new Map<number, number[]>();
    for (const [pid, s] of all) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
    const tree = (pid: number): number[] => {
      const out: number[] = [];
      const stack = [pid];
      while (stack.length) {
        const p = stack.pop()!;
        out.push(p);
        stack.push(...(children.get(p) ?? []));
      }
      return out;
    };
    const withMemory = this.readings++ % MEMORY_EVERY === 0;
    for (const p of this.processes()) {
      if (!all.has(p.pid)) continue;
      const pids = tree(p.pid);
      const seconds = pids.reduce((sum, pid) => sum + (all.get(pid)?.ticks ?? 0), 0) / clockTicks();
      const bytes = withMemory ? treeMemory(pids) : 0;
      const t = this.tracked.get(p.pid);
      if (t) {
        t.last = Math.max(t.last, seconds);
        t.peakBytes = Math.max(t.peakBytes, bytes);
      } else {
        const from = this.began ? 0 : seconds;
        this.tracked.set(p.pid, { name: p.name, kind: p.kind, from, last: seconds, peakBytes: bytes });
      }
    }
  }

  /** From now on: what each process used so far is left out. */
  begin(): void {
    this.readings = 0;
    this.sample();
    for (const t of this.tracked.values()) {
      t.from = t.last;
      t.peakBytes = 0;
    }
    this.began = true;
  }

  /** CPU-seconds of each process since begin(), by name. */
  byProcess(): Map<string, number> {
    this.sample();
    const out = new Map<string, number>();
    for (const t of this.tracked.values()) out.set(t.name, (out.get(t.name) ?? 0) + t.last - t.from);
    return out;
  }

  /** Each process's largest resident memory since begin() (its tree: Postgres with its backends). */
  memoryPeaks(): MemoryPeak[] {
    return [...this.tracked.values()]
      .filter((t) => t.peakBytes > 0)
      .map((t) => ({ kind: t.kind, name: t.name, peakMb: Math.round(t.peakBytes / 2 ** 20) }));
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
