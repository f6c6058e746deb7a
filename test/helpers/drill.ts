import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { nodeScript } from '../../dev/proc';

// `npm run drill` as its user runs it: a child process, its exit code and its output.

const root = path.resolve(__dirname, '../..');

/** The drills' output folders this test file made: deleted once every test of it passed (a failure's stay for a look). */
const outputs: string[] = [];
test.after(() => outputs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** A new folder for a drill's --out. */
export function drillOutDir(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `drill-test-${name}-`));
  outputs.push(dir);
  return dir;
}

export interface DrillRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `env`: more environment for the drill (a database of the test's own, say). */
export function runDrill(
  args: string[],
  onStderr?: (text: string) => void,
  env: NodeJS.ProcessEnv = {},
): Promise<DrillRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeScript(path.join(root, 'drill/main.ts')), ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      onStderr?.(stderr);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
