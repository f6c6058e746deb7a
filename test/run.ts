// `npm test`: the two tiers, fast first, so a broken workflow branch fails in a minute.
// - The fast tier (test/fast/): pure functions and every workflow branch against a local Temporal
//   with mocked activities; no Postgres, emulator or browser (test/runner/fast.ts).
// - The stack tier (every other test file, the workspaces' packages/*/test/ among them): against a
//   throwaway stack, its own Postgres and an in-memory Temporal dev server (test/runner/stack.ts).
// Arguments go to ava: `npm test -- test/saga` runs one folder (of whichever tier it is in);
// `npm test -- --tier fast` (`npm run test:fast`) or `--tier stack` runs one tier.
import fs from 'node:fs';
import path from 'node:path';
import { Interrupts, repoRoot, trimCompileCache } from './runner/ava';
import { compileForRun } from './runner/compile';
import { FAST_DIR, runFastTier } from './runner/fast';
import { runStackTier } from './runner/stack';

type Tier = 'fast' | 'stack';

/** Which tiers to run, and each one's files, from the command line. */
export function planTiers(argv: string[]): {
  tiers: Tier[];
  fastFiles: string[];
  stackFiles: string[];
  flags: string[];
} {
  const flags: string[] = [];
  const files: string[] = [];
  let only: Tier | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--tier') {
      const tier = argv[++i];
      if (tier !== 'fast' && tier !== 'stack') throw new Error(`--tier is fast or stack, not ${tier ?? 'nothing'}`);
      only = tier;
    } else if (arg.startsWith('-')) flags.push(arg);
    else files.push(arg);
  }
  const isFast = (f: string) => f.replace(/^\.\//, '').startsWith(FAST_DIR);
  const fastFiles = files.filter(isFast);
  const stackFiles = files.filter((f) => !isFast(f));
  const tiers: Tier[] = only
    ? [only]
    : files.length === 0
      ? ['fast', 'stack']
      : [...(fastFiles.length ? (['fast'] as const) : []), ...(stackFiles.length ? (['stack'] as const) : [])];
  return { tiers, fastFiles, stackFiles, flags };
}

async function main(): Promise<number> {
  const interrupts = new Interrupts();
  const plan = planTiers(process.argv.slice(2));
  trimCompileCache();
  const tree = compileForRun(repoRoot);
  try {
    for (const tier of plan.tiers) {
      const code =
        tier === 'fast'
          ? await runFastTier(interrupts, tree, plan.fastFiles, plan.flags)
          : await runStackTier(interrupts, tree, plan.flags, plan.stackFiles);
      if (code !== 0 || interrupts.signal) return interrupts.exitCode(code);
    }
    return 0;
  } finally {
    fs.rmSync(path.join(repoRoot, tree), { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`[test] ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
