import fs from 'node:fs';
import path from 'node:path';
import libCoverage from 'istanbul-lib-coverage';
import libReport from 'istanbul-lib-report';
import { createSourceMapStore } from 'istanbul-lib-source-maps';
import reports from 'istanbul-reports';

// The fast tier's report of which workflow branches ran: the counts each test file left in
// FAST_COVERAGE_DIR (test/fast/helpers/temporal.ts), merged, mapped back to the TypeScript lines,
// printed as a table of workflows/, and checked: every branch of every workflow file ran, or the file
// is named with what it missed. A branch that cannot run in a test says so in the code, next to it
// (`istanbul ignore`, with the reason).

const repoRoot = path.resolve(__dirname, '..', '..');
const WORKFLOWS = path.join(repoRoot, 'workflows') + path.sep;

export interface CoverageVerdict {
  /** Workflow files with a branch, statement or function that never ran, and what it was. */
  missed: string[];
  /** The code left out of the count on purpose (`istanbul ignore`), each with the reason written beside it. */
  leftOut: string[];
  files: number;
}

/** Every `istanbul ignore` hint in workflows/: where, and the reason after its `--`. */
function leftOutOnPurpose(): string[] {
  const hints: string[] = [];
  for (const name of fs
    .readdirSync(WORKFLOWS)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    fs.readFileSync(path.join(WORKFLOWS, name), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const hint = /istanbul ignore (if|else|next)\s*(?:--\s*(.*?))?\s*\*\//.exec(line);
        if (hint) hints.push(`workflows/${name}:${i + 1} (${hint[1]}): ${hint[2] ?? 'NO REASON GIVEN'}`);
      });
  }
  return hints;
}

export async function reportWorkflowCoverage(dir: string): Promise<CoverageVerdict> {
  const raw = libCoverage.createCoverageMap({});
  for (const file of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (file.endsWith('.json')) raw.merge(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
  }
  const mapped = await createSourceMapStore().transformCoverage(raw);
  mapped.filter((file) => file.startsWith(WORKFLOWS));
  const context = libReport.createContext({
    dir: path.join(dir, 'report'),
    coverageMap: mapped,
    defaultSummarizer: 'flat',
  });
  // The table goes to stdout; the same, line by line, to <dir>/report/index.html.
  reports.create('text', { maxCols: 120 }).execute(context);
  reports.create('html').execute(context);
  const missed: string[] = [];
  for (const file of mapped.files()) {
    const fc = mapped.fileCoverageFor(file);
    const s = fc.toSummary();
    const name = path.relative(repoRoot, file);
    const gaps = [
      s.branches.covered < s.branches.total ? `${s.branches.total - s.branches.covered} branch(es)` : '',
      s.statements.covered < s.statements.total ? `${s.statements.total - s.statements.covered} statement(s)` : '',
      s.functions.covered < s.functions.total ? `${s.functions.total - s.functions.covered} function(s)` : '',
    ].filter(Boolean);
    if (gaps.length) missed.push(`${name}: ${gaps.join(', ')} never ran (uncovered lines: ${uncoveredLines(fc)})`);
  }
  return { missed, leftOut: leftOutOnPurpose(), files: mapped.files().length };
}

function uncoveredLines(fc: libCoverage.FileCoverage): string {
  const lines = new Set<number>(fc.getUncoveredLines().map(Number));
  const branches = fc.getBranchCoverageByLine();
  for (const [line, b] of Object.entries(branches)) if (b.coverage < 100) lines.add(Number(line));
  return [...lines].sort((a, b) => a - b).join(', ');
}
