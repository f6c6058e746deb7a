import { isIP } from 'node:net';

/**
 * The emulator accepts any test key and pays every session it is asked to: it must never stand where
 * real payments are expected. It runs when STRIPE_EMULATOR=1 says so, or when it only listens on this
 * machine's loopback interface outside production; otherwise the reason it refuses.
 */
export function devOnlyRefusal(env: NodeJS.ProcessEnv, host: string): string | null {
  if (env.STRIPE_EMULATOR === '1') return null;
  if (env.NODE_ENV === 'production') {
    return 'refusing to start: NODE_ENV is production, and the payments emulator is for development only (set STRIPE_EMULATOR=1 if this really is a development setup).';
  }
  if (isLoopback(host)) return null;
  return `refusing to start: STRIPE_EMULATOR_HOST=${host} is not a loopback address, and the payments emulator is for development only (set STRIPE_EMULATOR=1 to listen there anyway, e.g. in a development container).`;
}

/** Whether a host names this machine's loopback interface only (localhost, 127.0.0.0/8, ::1). */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || /^::ffff:127\./.test(bare);
  return false;
}
