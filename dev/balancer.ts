// The load balancer in front of several API processes, for the cluster rehearsal: HAProxy from the
// distro (`apt-get install haproxy`), started with a generated config on loopback. Round-robin over
// the APIs, health checks on /readyz, and a request whose API died before answering is sent to another
// one: the API's routes are safe to replay (a purchase by its Idempotency-Key, a webhook by its event
// id, a queue join by its buyer), which is what HAProxy asks of `retry-on empty-response`.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describeExit, runCommand, sleep, spawnChild, type ChildHandle, type Log } from './proc';
import { freePort } from './ports';
import { CROWD_PATH_PREFIXES, type Lane } from '../api/lanes';
import { isExecutable, which } from './tools';

const READY_TIMEOUT_MS = 15_000;

export interface BalancedServer {
  name: string;
  port: number;
  /** The lane this API serves first (api/lanes.ts); absent: every request. */
  lane?: Lane;
}

export interface Balancer {
  url: string;
  /** `HAProxy 2.6.12 on 127.0.0.1:PORT`. */
  describe: string;
  /** HAProxy's output, with a `request` line per answer (REQUEST_LOG_FORMAT). */
  logFile: string;
  child: ChildHandle;
  stop(): Promise<void>;
}

/** HAPROXY_PATH, else `haproxy` on PATH or in /usr/sbin; undefined when none is installed. */
export function findHaproxy(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.HAPROXY_PATH) {
    if (!isExecutable(env.HAPROXY_PATH)) throw new Error(`HAPROXY_PATH=${env.HAPROXY_PATH} is not an executable`);
    return env.HAPROXY_PATH;
  }
  return which('haproxy') ?? ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy'].find(isExecutable);
}

/**
 * One line per answer on HAProxy's output: `request <ms since the epoch> <method> <path> <status>
 * <Ta>`, Ta being the ms from the request's first byte reaching the balancer to the answer's last byte
 * leaving it: what a client next to the balancer waits (drill/balancer-times.ts reads it).
 */
export const REQUEST_LOG_FORMAT = 'request %Ts%ms %HM %HP %ST %Ta';

/**
 * The balancer's config. Each API is a checked server (`/readyz` every second, out after two
 * failures, back after two passes) and once more a backup without checks: when every API fails its
 * readiness at once (Temporal or Postgres down for all of them), the balancer still hands requests to
 * the APIs, which answer 503 with Retry-After themselves instead of the balancer's bare 503.
 * A refused connection or an empty answer (an API killed mid-request) is retried, each time on
 * another server (`option redispatch 1`). Timeouts exceed the API's own purchase deadline (20 s).
 * `option forwardfor` appends the client's address to X-Forwarded-For, which the APIs believe from
 * the balancer's address (TRUSTED_PROXIES): their per-address limits count each client, not HAProxy.
 */
export function haproxyConfig(o: { port: number; servers: BalancedServer[]; maxconn?: number }): string {
  const lanes = o.servers.some((s) => s.lane !== undefined);
  const serves = (lane: Lane) => o.servers.filter((s) => s.lane === undefined || s.lane === lane);
  // With lanes, a lane whose own APIs are all down is served by every API (the backups).
  const backend = (name: string, first: BalancedServer[]) => `backend ${name}
  balance roundrobin
  option allbackups
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 1s fastinter 500ms fall 2 rise 2
${[
  ...first.map((s) => `  server ${s.name} 127.0.0.1:${s.port} check`),
  ...o.servers.map((s) => `  server ${s.name}-fallback 127.0.0.1:${s.port} backup`),
].join('\n')}
`;
  const front = lanes
    ? `  acl crowd path_beg ${CROWD_PATH_PREFIXES.join(' ')}
  use_backend crowd if crowd
  default_backend apis`
    : '  default_backend apis';
  return `# Rendered by dev/balancer.ts for the cluster rehearsal.
global
  maxconn ${o.maxconn ?? 2000}
  nbthread 1
  log stdout format raw local0

defaults
  mode http
  timeout connect 1s
  timeout client 90s
  timeout server 90s
  timeout http-keep-alive 30s
  timeout check 2s
  retries 3
  retry-on conn-failure empty-response
  option redispatch 1
  option forwardfor
  log global
  option dontlognull
  log-format "${REQUEST_LOG_FORMAT}"

frontend api
  bind 127.0.0.1:${o.port}
${front}

${backend('apis', serves('buyers'))}${lanes ? `\n${backend('crowd', serves('crowd'))}` : ''}`;
}

/** Starts HAProxy in front of `servers` and resolves once it accepts connections. */
export async function startBalancer(o: {
  haproxy: string;
  dir: string;
  servers: BalancedServer[];
  log?: Log;
}): Promise<Balancer> {
  const version = (await runCommand(o.haproxy, ['-v'])).match(/version (\S+)/)?.[1] ?? 'unknown version';
  const port = await freePort();
  const configFile = path.join(o.dir, 'haproxy.cfg');
  fs.writeFileSync(configFile, haproxyConfig({ port, servers: o.servers, maxconn: maxConnections() }));
  await runCommand(o.haproxy, ['-c', '-q', '-f', configFile]);
  const logFile = path.join(o.dir, 'haproxy.log');
  const child = spawnChild({
    name: 'balancer',
    command: o.haproxy,
    // -db: stay in the foreground, one process (no master-worker): its pid is the one that works.
    args: ['-db', '-f', configFile],
    logFile,
    deathSignal: 'SIGTERM',
    stopSteps: [['SIGTERM', 5_000]],
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await accepts(port))) {
    const exit = child.exitInfo();
    if (exit) throw new Error(`HAProxy ${describeExit(exit)} before it listened:\n${child.output()}`);
    if (Date.now() > deadline) {
      await child.stop();
      throw new Error(`HAProxy did not listen on 127.0.0.1:${port} within ${READY_TIMEOUT_MS / 1000}s`);
    }
    await sleep(100);
  }
  o.log?.(`[balancer] HAProxy ${version} on 127.0.0.1:${port} over ${o.servers.map((s) => s.name).join(', ')}`);
  return {
    url: `http://127.0.0.1:${port}`,
    describe: `HAProxy ${version} on 127.0.0.1:${port}`,
    logFile,
    child,
    stop: () => child.stop(),
  };
}

/**
 * Connections HAProxy may hold: each takes two descriptors (client and server side), and HAProxy
 * refuses to start when the hard limit on open files cannot cover them.
 */
function maxConnections(): number {
  const hard = /^Max open files\s+\S+\s+(\d+)/m.exec(readOr('/proc/self/limits'))?.[1];
  return hard ? Math.max(256, Math.min(20_000, Math.floor((Number(hard) - 64) / 2))) : 2000;
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
