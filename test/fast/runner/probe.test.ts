import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { describeProbe, lastWarnings, type ProbeRecord } from '../../runner/probe';

const at = (clock: string) => Date.parse(`2026-12-05T${clock}Z`);
const second = (clock: string, cpu = 0.2, io = 0, memory = 0) => ({ at: at(clock), cpu, io, memory });

test('the probe names the slowest look of each kind, and each stall with what the machine waited for meanwhile', (t) => {
  const record: ProbeRecord = {
    postgres: [
      { at: at('23:01:40'), ms: 4 },
      { at: at('23:01:41'), ms: 31_500 },
      { at: at('23:02:13'), ms: 7 },
    ],
    temporal: [
      { at: at('23:01:40'), ms: 2 },
      { at: at('23:01:45'), ms: 3_000, error: 'deadline exceeded' },
    ],
    timers: [{ at: at('23:01:40'), ms: 12 }],
    pressure: [second('23:01:41'), second('23:01:42', 0.9, 0.8), second('23:01:43'), second('23:05:00', 0.95)],
  };
  const [summary, ...stalls] = describeProbe(record);
  t.is(
    summary,
    'slowest: Postgres commit 31500 ms at 23:01:41, Temporal task-queue lookup 3000 ms at 23:01:45, ' +
      "launcher's timer late by 12 ms at 23:01:40; most of a second waiting for a CPU 95 %, the disk 80 %, memory 0 %; " +
      'failed looks: Temporal 1',
  );
  t.deepEqual(stalls, [
    '23:01:41 Postgres commit took 31500 ms (waiting for a CPU up to 90 %, the disk 80 %)',
    '23:01:42 waiting for the disk 80 % of the second',
    // No second of pressure was recorded while it ran: nothing to say of the machine.
    '23:01:45 Temporal task-queue lookup took 3000 ms, failed: deadline exceeded',
  ]);
  // A CPU wanted by many (the tier's usual state) is no stall by itself.
  t.false(stalls.some((line) => line.startsWith('23:05:00')));
});

test('a quiet run is one line and says so; a long list is cut at its most', (t) => {
  const quiet: ProbeRecord = { postgres: [{ at: at('10:00:00'), ms: 3 }], temporal: [], timers: [], pressure: [] };
  t.deepEqual(describeProbe(quiet), [
    "slowest: Postgres commit 3 ms at 10:00:00, Temporal task-queue lookup never, launcher's timer late by never; " +
      'most of a second waiting for a CPU unknown, the disk unknown, memory unknown',
    'no stall: every look under a second',
  ]);
  const noisy: ProbeRecord = {
    ...quiet,
    timers: Array.from({ length: 5 }, (_, i) => ({ at: at(`10:00:0${i}`), ms: 2_000 })),
  };
  const lines = describeProbe(noisy, 3);
  t.is(lines.length, 1 + 3 + 1);
  t.is(lines[1], "10:00:00 launcher's timer ran 2000 ms late");
  t.is(lines.at(-1), '… and 2 more');
});

test("a failed run's report takes the Temporal server's last warnings and errors, and nothing from a log it cannot read", (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-log-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const log = path.join(dir, 'temporal.log');
  const lines = [
    'Temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)',
    ...Array.from({ length: 4 }, (_, i) => `time=T${i} level=WARN msg="Slow gRPC call" duration=${i}s`),
    'time=T9 level=INFO msg="not shown"',
    'time=T10 level=ERROR msg="persistence failed"',
  ];
  fs.writeFileSync(log, lines.join('\n'));
  t.deepEqual(lastWarnings(log, 3), [
    'time=T2 level=WARN msg="Slow gRPC call" duration=2s',
    'time=T3 level=WARN msg="Slow gRPC call" duration=3s',
    'time=T10 level=ERROR msg="persistence failed"',
  ]);
  t.deepEqual(lastWarnings(path.join(dir, 'gone.log')), []);
});
