import { isIP, type Server } from 'node:net';
import { ConfigError } from './reader';

// Where a process listens is configuration: a port another process holds, or a host that is no
// address of this machine, stops it like any bad setting, with one line naming the variable (not
// the stack trace of an unhandled 'error' event).

/** The variables a listener's port and host come from, and their values. */
export interface ListenSettings {
  port: number;
  host: string;
  portVar: string;
  hostVar: string;
}

/**
 * How many connections the kernel keeps waiting for the process to accept them (Node's default is
 * 511; the kernel caps it at net.core.somaxconn, 4096 on Linux 5.4 and later). A crowd's burst opens
 * connections faster than a busy event loop accepts them: a full queue drops the handshake, and the
 * client (a load balancer, a buyer) tries again only after a second or more.
 */
export const LISTEN_BACKLOG = 4096;

const HOST_EXAMPLES = 'e.g. 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)';

/** The configuration problem a failed `listen` stands for, naming the variable to change. */
export function listenProblem(err: NodeJS.ErrnoException, s: ListenSettings): ConfigError {
  const code = err.code ?? 'unknown error';
  switch (err.code) {
    case 'EADDRINUSE':
      return new ConfigError(`${s.portVar} ${s.port} is already in use (${code}); set ${s.portVar} to a free port`);
    case 'EACCES':
      return new ConfigError(
        `${s.portVar} ${s.port} may not be opened by this user (${code}); set ${s.portVar} to 1024 or above`,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
    case 'EADDRNOTAVAIL':
    case 'EAFNOSUPPORT':
      return new ConfigError(
        `${s.hostVar} "${s.host}" is not an address of this machine (${code}); set ${s.hostVar} to one of its addresses, ${HOST_EXAMPLES}`,
      );
    default:
      return new ConfigError(
        `could not listen on ${s.hostVar} "${s.host}", ${s.portVar} ${s.port}: ${err.message} (${code})`,
      );
  }
}

/**
 * Resolves once `server` (whose `listen` was just called) listens; rejects with `listenProblem`
 * when it cannot. Its 'error' comes a tick after `listen` at the earliest, so this may follow it.
 */
export function listening(server: Server, s: ListenSettings): Promise<void> {
  return new Promise((resolve, reject) => {
    if (server.listening) {
      resolve();
      return;
    }
    const failed = (err: NodeJS.ErrnoException) => {
      server.off('listening', listened);
      reject(listenProblem(err, s));
    };
    const listened = () => {
      server.off('error', failed);
      resolve();
    };
    server.once('error', failed).once('listening', listened);
  });
}

/** Whether a host names this machine's loopback interface only (localhost, 127.0.0.0/8, ::1). */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || /^::ffff:127\./.test(bare);
  return false;
}
