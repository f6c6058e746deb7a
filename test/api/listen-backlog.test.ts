import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import test from 'ava';
import { LISTEN_BACKLOG } from '../../config/listen';
import { startTestApi } from '../helpers/api-process';

// The real API process (api/main.ts) keeps a crowd's new connections waiting for it up to
// LISTEN_BACKLOG, not Node's default 511: in the 10,000-buyer cluster drill with the crowd on one API
// (--crowd-apis 1), 511 overflowed 36,357 times in the opening's 20 s (TcpExtListenOverflows), each a
// dropped handshake tried again a second or more later. The kernel caps the queue at
// net.core.somaxconn; `ss` shows a listener's queue size as its Send-Q.

test('the API listens with a backlog of LISTEN_BACKLOG, as far as the kernel allows', async (t) => {
  const { api, port } = await startTestApi('listen-backlog');
  try {
    await api.ready;
    const line = execFileSync('ss', ['-Hltn', `sport = :${port}`], { encoding: 'utf8' }).trim();
    const [state, , sendQ] = line.split(/\s+/);
    t.is(state, 'LISTEN', line);
    const somaxconn = Number(fs.readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    t.is(Number(sendQ), Math.min(LISTEN_BACKLOG, somaxconn), line);
  } finally {
    await api.child.stop();
  }
});
