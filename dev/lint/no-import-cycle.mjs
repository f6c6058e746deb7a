// @ts-check
// The lint rule `local/no-import-cycle`: no module of the project imports a module with a path of
// imports back to itself. Every import counts: `import type` and `export type` (why: eslint.config.mjs),
// `import()`, `require`, re-exports and `import('...')` in a type.
//
// Imports are read as TypeScript reads them (ts.preProcessFile) and resolved by its own module
// resolution with tsconfig.json's options, so an import reaches the file `tsc` compiles. A package
// (node_modules, a workspace's link) ends the path: its own circles are its own.

import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * What is known of one project, for a while (KEPT_MS): its options, how its imports resolve and the
 * files each file imports. After it, each file is looked at again (and read again if its size or
 * mtime changed), so a long-running linter (an editor's) sees other files' edits, and modules added
 * or removed, within the while; the file being linted is always taken as it is.
 * @typedef {{
 *   options: ts.CompilerOptions,
 *   since: number,
 *   resolutions: ts.ModuleResolutionCache,
 *   imports: Map<string, string[]>,
 * }} Project
 */

const KEPT_MS = 10_000;

/** @type {Map<string, Project>} by tsconfig path */
const projects = new Map();

/** @param {string} tsconfig */
function projectOf(tsconfig) {
  const kept = projects.get(tsconfig);
  if (kept && Date.now() - kept.since < KEPT_MS) return kept;
  const read = ts.readConfigFile(tsconfig, (file) => ts.sys.readFile(file));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const root = path.dirname(tsconfig);
  const { options } = ts.parseJsonConfigFileContent(read.config, ts.sys, root);
  /** @type {Project} */
  const project = {
    options,
    since: Date.now(),
    resolutions: ts.createModuleResolutionCache(root, (f) => f, options),
    imports: new Map(),
  };
  projects.set(tsconfig, project);
  return project;
}

/**
 * The project file `specifier` names from `from`, or undefined for a package, a built-in or a name
 * that does not resolve (tsc reports that one).
 * @param {Project} project @param {string} specifier @param {string} from
 */
function resolve(project, specifier, from) {
  const { options, resolutions } = project;
  const mode = ts.getImpliedNodeFormatForFile(from, resolutions.getPackageJsonInfoCache(), ts.sys, options);
  const { resolvedModule } = ts.resolveModuleName(specifier, from, options, ts.sys, resolutions, undefined, mode);
  if (!resolvedModule || resolvedModule.isExternalLibraryImport) return undefined;
  const file = path.resolve(resolvedModule.resolvedFileName);
  return file.split(path.sep).includes('node_modules') ? undefined : file;
}

/** Every module `text` names: imports and re-exports, `import type`, `import()`, `require`, `import('...')` types. */
const specifiersOf = (/** @type {string} */ text) => ts.preProcessFile(text, true, true).importedFiles;

/** @type {Map<string, { mtimeMs: number, size: number, specifiers: string[] }>} each file's, as last read */
const saved = new Map();

/** The modules `file` names, as saved. @param {string} file */
function savedSpecifiers(file) {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch {
    return [];
  }
  const kept = saved.get(file);
  if (kept && kept.mtimeMs === stat.mtimeMs && kept.size === stat.size) return kept.specifiers;
  const specifiers = specifiersOf(fs.readFileSync(file, 'utf8')).map((s) => s.fileName);
  saved.set(file, { mtimeMs: stat.mtimeMs, size: stat.size, specifiers });
  return specifiers;
}

/** The project files `file` (as saved) imports. @param {Project} project @param {string} file */
function importsOf(project, file) {
  let targets = project.imports.get(file);
  if (!targets) {
    const resolved = savedSpecifiers(file).map((s) => resolve(project, s, file));
    targets = [...new Set(resolved.filter((f) => f !== undefined))];
    project.imports.set(file, targets);
  }
  return targets;
}

/**
 * The files with a path of imports to `home`: one walk of what `home` reaches, then back along the
 * imports to `home`. (A walk from each import of `home` would go over the same files once each.)
 * @param {Project} project @param {string} home @param {string[]} homeImports
 */
function leadingTo(project, home, homeImports) {
  /** @type {Map<string, string[]>} each file reached, with the files that import it */
  const importers = new Map([[home, []]]);
  const queue = [home];
  for (let i = 0; i < queue.length; i++) {
    for (const next of i === 0 ? homeImports : importsOf(project, queue[i])) {
      const known = importers.get(next);
      if (known) known.push(queue[i]);
      else {
        importers.set(next, [queue[i]]);
        queue.push(next);
      }
    }
  }
  const back = new Set([home]);
  const stack = [home];
  for (let at = stack.pop(); at !== undefined; at = stack.pop()) {
    for (const prev of importers.get(at) ?? []) {
      if (back.has(prev)) continue;
      back.add(prev);
      stack.push(prev);
    }
  }
  return back;
}

/**
 * The shortest path of imports from `start` back to `home` (both included), through `within` (the
 * files leading to `home`) only; `start` is one of them.
 * @param {Project} project @param {string} start @param {string} home @param {Set<string>} within
 */
function pathBack(project, start, home, within) {
  /** @type {Map<string, string | null>} each file reached, by the one that imports it */
  const cameFrom = new Map([[start, null]]);
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    for (const next of importsOf(project, queue[i])) {
      if (cameFrom.has(next) || !within.has(next)) continue;
      cameFrom.set(next, queue[i]);
      if (next === home) break;
      queue.push(next);
    }
    if (cameFrom.has(home)) break;
  }
  const route = [];
  for (let at = /** @type {string | null | undefined} */ (home); at; at = cameFrom.get(at)) route.unshift(at);
  return route;
}

/** @type {import('eslint').Rule.RuleModule} */
const noImportCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid an import circle among the project’s own modules, type-only imports included.' },
    schema: [
      {
        type: 'object',
        properties: { tsconfig: { type: 'string', description: 'the tsconfig whose options resolve imports' } },
        required: ['tsconfig'],
        additionalProperties: false,
      },
    ],
    messages: {
      cycle:
        'Import circle: {{route}}. Move what both need to the module it belongs in (or a small new one); `import type` counts too.',
    },
  },
  create(context) {
    const file = context.physicalFilename;
    if (!path.isAbsolute(file)) return {};
    const { tsconfig } = /** @type {{ tsconfig: string }} */ (context.options[0]);
    const project = projectOf(tsconfig);
    const root = path.dirname(tsconfig);
    const source = context.sourceCode;
    return {
      Program() {
        // The file as it is being linted (an editor's unsaved text); the files it reaches, as saved.
        const imports = specifiersOf(source.text).map((imported) => ({
          imported,
          target: resolve(project, imported.fileName, file),
        }));
        const targets = imports.map(({ target }) => target).filter((t) => t !== undefined && t !== file);
        if (!targets.length) return;
        const circle = leadingTo(project, file, [...new Set(targets)]);
        for (const { imported, target } of imports) {
          if (target === undefined || target === file || !circle.has(target)) continue;
          const route = pathBack(project, target, file, circle);
          context.report({
            loc: { start: source.getLocFromIndex(imported.pos), end: source.getLocFromIndex(imported.end) },
            messageId: 'cycle',
            data: { route: [file, ...route].map((f) => path.relative(root, f)).join(' → ') },
          });
        }
      },
    };
  },
};

export default { meta: { name: 'local' }, rules: { 'no-import-cycle': noImportCycle } };
