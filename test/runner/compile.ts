import fs from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { isAlive } from '../../dev/proc';

// `npm test` runs the repository compiled to plain CommonJS, not through tsx: each of the ~180 test
// processes of both tiers and the ~170 APIs, workers and CLIs they start would otherwise spend 0.4
// to 0.7 s of CPU in tsx's hooks before doing anything (docs/testing.md). esbuild writes the
// JavaScript in about a second, into a tree that mirrors the repository: every other file is linked
// in at its own path (the .ts sources too), so the code's own `__dirname`-relative paths
// (docs/openapi.json, store/migrations, deploy/, …) find what they find from the source.

/** Where the compiled trees go, one per run (`build/<pid>`), under the repository (so `node_modules` resolves from them). */
export const BUILD_DIR = 'build';
/** Top-level entries that are not mirrored: installed packages, git, and the compiled trees themselves. */
const NOT_MIRRORED = new Set(['node_modules', '.git', BUILD_DIR]);
/** Folders linked whole, not walked: local data (Postgres clusters of `npm start`), fetched tools, outputs. */
const LINKED_WHOLE = new Set(['.data', '.tools', 'dist', 'coverage', 'node_modules']);

/**
 * Compiles the repository at `root` for this run, after deleting the trees of runs that are gone;
 * the tree's path relative to `root`. The caller deletes it when the run ends.
 */
export function compileForRun(root: string): string {
  const builds = path.join(root, BUILD_DIR);
  for (const name of fs.existsSync(builds) ? fs.readdirSync(builds) : []) {
    if (!/^\d+$/.test(name) || !isAlive(Number(name)))
      fs.rmSync(path.join(builds, name), { recursive: true, force: true });
  }
  const tree = path.join(BUILD_DIR, String(process.pid));
  fs.rmSync(path.join(root, tree), { recursive: true, force: true });
  compileTree(root, path.join(root, tree));
  return tree;
}

/** A test file or folder named from the repository's root (`test/x.test.ts`, `test/saga`), in the compiled tree. */
export function inTree(tree: string, file: string): string {
  return path.join(tree, file.replace(/^\.\//, '').replace(/\.ts(?=$|:)/, '.js'));
}

/**
 * Compiles every TypeScript file of `root` into `outDir` (created; inside `root`), beside links to
 * every other file, with inline source maps (stack traces name the .ts lines under
 * --enable-source-maps). The workspace packages resolve to their compiled copies.
 */
function compileTree(root: string, outDir: string): void {
  fs.mkdirSync(outDir, { recursive: true });
  // Local data is shared with the source tree (config/dev-secrets.ts keeps secrets in <root>/.data).
  fs.mkdirSync(path.join(root, '.data'), { recursive: true });
  const sources: string[] = [];
  const mirror = (rel: string, top: boolean): void => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      if (top && NOT_MIRRORED.has(entry.name)) continue;
      const from = path.join(root, rel, entry.name);
      const to = path.join(outDir, rel, entry.name);
      if (entry.isDirectory() && !LINKED_WHOLE.has(entry.name) && holdsTypeScript(from)) {
        fs.mkdirSync(to);
        mirror(path.join(rel, entry.name), false);
        continue;
      }
      fs.symlinkSync(from, to);
      if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) sources.push(from);
    }
  };
  mirror('', true);
  buildSync({
    entryPoints: sources,
    outdir: outDir,
    outbase: root,
    format: 'cjs',
    platform: 'node',
    target: 'node22',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  linkWorkspacePackages(root, outDir);
}

/** A folder with a TypeScript file somewhere under it is walked; any other is linked whole (kustomize, for one, reads no linked file). */
function holdsTypeScript(dir: string): boolean {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).some((f) => f.endsWith('.ts'));
}

/**
 * `@flash-sale/<name>` from the compiled tree: a package.json of its own whose entry points name
 * the .js files, and a link to it in the tree's node_modules (found before the repository's).
 */
function linkWorkspacePackages(root: string, outDir: string): void {
  const packages = path.join(root, 'packages');
  if (!fs.existsSync(packages)) return;
  for (const name of fs.readdirSync(packages)) {
    const manifestFile = path.join(outDir, 'packages', name, 'package.json');
    if (!fs.existsSync(manifestFile)) continue;
    const manifest = fs.readFileSync(manifestFile, 'utf8');
    fs.rmSync(manifestFile);
    fs.writeFileSync(manifestFile, manifest.replace(/\.ts"/g, '.js"'));
    const { name: packageName } = JSON.parse(manifest) as { name: string };
    const link = path.join(outDir, 'node_modules', packageName);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.join(outDir, 'packages', name), link);
  }
}
