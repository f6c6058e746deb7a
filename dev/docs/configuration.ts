import type { ConfigProcess, Section, Tool, Variable } from '../../config/variables';
import { cell, code, replaceGenerated, type Generated } from './markdown';

// The files written from the configuration table (config/variables): the README's short table,
// docs/configuration.md's full one and .env.example. Pure: the drift test renders them again and
// compares them with the files.

const SOURCE = 'config/variables';

const SECTIONS: Record<Section, string> = {
  service: 'The service (API, worker, operator CLIs)',
  local: 'Running it locally (`npm start`)',
  compose: 'Docker Compose',
  rehearsal: 'Rehearsals, benchmarks and tests',
};

const READER_NAMES: Record<ConfigProcess | Tool, string> = {
  api: 'api',
  worker: 'worker',
  cli: 'CLIs',
  'npm start': '`npm start`',
  launcher: 'launcher',
  emulator: 'emulator',
  'docker compose': 'Compose',
  drill: 'drill',
  benchmarks: 'benchmarks',
  tests: 'tests',
};

function defaultOf(v: Variable): string {
  if (v.defaultText) return v.defaultText;
  if (v.defaultBy) {
    return Object.entries(v.defaultBy)
      .map(([proc, n]) => `${code(n)} (${proc})`)
      .join(', ');
  }
  return v.default === undefined ? '—' : code(v.default);
}

function boundsOf(v: Variable): string {
  if (v.min === undefined && v.max === undefined) return '';
  if (v.max === undefined) return `≥ ${v.min}`;
  return `${v.min ?? 0} – ${v.max}`;
}

/** The first clause of a doc: what the README's short table says. */
function brief(doc: string): string {
  const cut = [doc.indexOf('; '), doc.indexOf('. '), doc.indexOf(' (')].filter((i) => i > 0);
  return cut.length ? doc.slice(0, Math.min(...cut)) : doc;
}

/** Links written from the repository's root, as seen from a page in docs/. */
const fromDocs = (doc: string) => doc.replaceAll('](docs/', '](');

/** The README's table: what a first deployment sets. */
export function readmeTable(vars: readonly Variable[]): string {
  const rows = vars
    .filter((v) => v.essential)
    .map((v) => `| ${code(v.name)} | ${cell(defaultOf(v))} | ${cell(brief(v.doc))} |`);
  return ['| variable | default | what it is |', '|---|---|---|', ...rows].join('\n');
}

/** docs/configuration.md's tables: every variable, by who reads it. */
export function fullTables(vars: readonly Variable[]): string {
  const parts: string[] = [];
  for (const [section, title] of Object.entries(SECTIONS) as [Section, string][]) {
    const rows = vars
      .filter((v) => v.section === section)
      .map((v) => {
        const readers = v.readBy.map((r) => READER_NAMES[r]).join(', ');
        return `| ${code(v.name)} | ${readers} | ${cell(defaultOf(v))} | ${boundsOf(v)} | ${cell(fromDocs(v.doc))} |`;
      });
    parts.push(
      `### ${title}`,
      '',
      '| variable | read by | default | bounds | meaning |',
      '|---|---|---|---|---|',
      ...rows,
      '',
    );
  }
  return parts.join('\n').trimEnd();
}

/** Words wrapped at `width` columns, each line behind `prefix`. */
function wrap(text: string, prefix: string, width = 100): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && prefix.length + line.length + 1 + word.length > width) {
      lines.push(prefix + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(prefix + line);
  return lines;
}

const ENV_HEADER = `Copy to .env for \`docker compose up\` (Compose reads .env beside docker-compose.yml). Every variable docker-compose.yml uses is here. The secrets are empty on purpose: the worker and the API refuse to start without them, naming each one. Tokens: \`openssl rand -hex 32\`. Written by \`npm run docs\` from config/variables; every other variable is in docs/configuration.md.`;

/** .env.example: the variables Compose passes on, each under what it is for. */
export function envExample(vars: readonly Variable[]): string {
  const out = [...wrap(ENV_HEADER, '# ')];
  for (const v of vars.filter((v) => v.example !== undefined)) {
    out.push('', ...wrap(fromDocs(v.doc).replace(/\]\([^)]*\)/g, ']'), '# '), `${v.name}=${v.example}`);
  }
  return `${out.join('\n')}\n`;
}

/** Each generated file, by its path from the repository's root, and how it is written from what it holds. */
export function configurationFiles(vars: readonly Variable[]): Generated[] {
  return [
    { file: 'README.md', render: (text) => replaceGenerated(text, readmeTable(vars), 'README.md', SOURCE) },
    {
      file: 'docs/configuration.md',
      render: (text) => replaceGenerated(text, fullTables(vars), 'docs/configuration.md', SOURCE),
    },
    { file: '.env.example', render: () => envExample(vars) },
  ];
}
