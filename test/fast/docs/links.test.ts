import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';

// The README is a front door into docs/: every relative link of the README and of docs/*.md leads to
// a file that exists and, with a #fragment, to a heading of that file (GitHub's anchors).

const root = path.resolve(__dirname, '../../..');
const pages = [
  'README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped but hyphens and underscores, spaces to hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6} (.+)$/gm)) {
    const a = anchor(m[1]);
    const n = seen.get(a) ?? 0;
    seen.set(a, n + 1);
    out.add(n ? `${a}-${n}` : a);
  }
  return out;
}

test('every relative link of the README and docs/ leads to a file and a heading that exist', (t) => {
  const broken: string[] = [];
  for (const page of pages) {
    const text = fs.readFileSync(path.join(root, page), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/i.test(target)) continue;
      const [file, fragment] = target.split('#');
      const full = file ? path.resolve(path.dirname(path.join(root, page)), file) : path.join(root, page);
      if (!fs.existsSync(full)) broken.push(`${page}: ${target} (no such file)`);
      else if (fragment && full.endsWith('.md') && !anchorsOf(full).has(fragment)) {
        broken.push(`${page}: ${target} (no such heading)`);
      }
    }
  }
  t.deepEqual(broken, []);
});

test('the README stays a front door: at most about 250 lines', (t) => {
  const lines = fs.readFileSync(path.join(root, 'README.md'), 'utf8').split('\n').length;
  t.true(lines <= 250, `README.md has ${lines} lines`);
});
