import { proxySinks, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

// Runs in the fast tier's workflow bundle (test/fast/helpers/bundle.ts), in the place of
// @temporalio/nyc-test-coverage's own interceptor, which copies the whole of Istanbul's data (every
// file's maps and source map, some 300 kB) through JSON and the sink at every activation. This sends
// each file's data once per workflow, then only the counts that moved since the last activation: the
// same counts, a hundredth of the copying. The bundle leaves this file out of the count.

/** Istanbul's counts for one file: statements, functions, and each branch's paths. */
export interface CoverageCounts {
  s: Record<string, number>;
  f: Record<string, number>;
  b: Record<string, number[]>;
}
/** Istanbul's data for one file: its counts, and the maps that place them in the source. */
export type FileCoverageData = CoverageCounts & Record<string, unknown>;

export interface CoverageSinks extends Sinks {
  fastCoverage: {
    /** `files`: the whole data of files this workflow had not sent yet; `counts`: what moved in the others. */
    counted(files: Record<string, FileCoverageData>, counts: Record<string, Partial<CoverageCounts>>): void;
  };
}

const { fastCoverage } = proxySinks<CoverageSinks>();
/** The files whose data this workflow has sent (the bundle's modules are evaluated anew for each workflow). */
const sent = new Set<string>();

/** Copies the counts that are not zero, and zeroes them: what the next activation sends is what it ran. */
function take<T extends number | number[]>(counts: Record<string, T>): Record<string, T> | undefined {
  let moved: Record<string, T> | undefined;
  for (const [id, n] of Object.entries(counts)) {
    if (Array.isArray(n) ? n.some((x) => x !== 0) : n !== 0) {
      (moved ??= {})[id] = (Array.isArray(n) ? [...n] : n) as T;
      if (Array.isArray(n)) n.fill(0);
      else (counts as Record<string, number>)[id] = 0;
    }
  }
  return moved;
}

function send(): void {
  const all = (globalThis as { __coverage__?: Record<string, FileCoverageData> }).__coverage__;
  if (!all) return;
  const files: Record<string, FileCoverageData> = {};
  const counts: Record<string, Partial<CoverageCounts>> = {};
  let any = false;
  for (const [path, data] of Object.entries(all)) {
    if (!sent.has(path)) {
      sent.add(path);
      files[path] = JSON.parse(JSON.stringify(data)) as FileCoverageData;
      take(data.s);
      take(data.f);
      take(data.b);
      any = true;
      continue;
    }
    const s = take(data.s);
    const f = take(data.f);
    const b = take(data.b);
    if (s || f || b) {
      counts[path] = { ...(s && { s }), ...(f && { f }), ...(b && { b }) };
      any = true;
    }
  }
  if (any) fastCoverage.counted(files, counts);
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  internals: [
    {
      concludeActivation(input, next) {
        send();
        return next(input);
      },
    },
  ],
});
