import fs from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';

// The stack tier runs the repository compiled to plain CommonJS, not through tsx: each of its
// ~120 test processes and the ~170 APIs, workers and CLIs they start would otherwise spend about
// 0.7 s of CPU in tsx's loader hooks before doing anything (docs/testing.md). esbuild writes the
// JavaScript in well under two seconds, into a tree that mirrors the repository: every other file is
// linked in at its own path (the .ts sources too), so the code's own `__dirname`-relative paths
// (docs/openapi.json, store/migrations, deploy/, …) find what they find from the source.

/** Where the compiled trees go, one per run, under the repository (so `node_modules` resolves from them). */
export const BUILD_DIR = 'build';
/** Top-level entries that are not mirrored: installed packages, git, and the compiled trees themselves. */
const NOT_MIRRORED = new Set(['node_modules', '.git', BUILD_DIR]);
/** Folders linked whole, not walked: local data (Postgres clusters of `npm start`), fetched tools, outputs. */
const LINKED_WHOLE = new Set(['.data', '.tools', 'dist', 'coverage', 'node_modules']);

/**
 * Compiles every TypeScript file of `root` into `outDir` (created; inside `root`), beside links to
 * every other file, with inline source maps (stack traces name the .ts lines under
 * --enable-source-maps). The workspace packages resolve to their compiled copies.
 */
export function compileTree(root: string, outDir: string): void {
  fs.mkdirSync(outDir, { recursive: true });
  // Local data is shared with the source tree (config/dev-secrets.ts keeps secrets in <root>/.data).
  fs.mkdirSync(path.join(root, '.data'), { recursive: true });
  const sources: string[] = [];
  const mirror = (rel: string, top: boolean): void => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      if (top && NOT_MIRRORED.has(entry.name)) continue;
      const from = path.join(root, rel, entry.name);
      const to = path.join(outDir, rel, entry.name);
      if (entry.isDirectory() && !LINKED_WHOLE.has(entry.name)) {
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
