import path from 'node:path';
import { devBuyerSecret } from './buyer-tokens';
import type { Env } from './env';
import { isLiveKey } from './stripe-key';
import { VARIABLES } from './variables';

// The values `npm start` and the payments emulator fill in for a secret left unset. They are printed
// in this repository, its docs and every local log, so they protect nothing: where real money moves
// (a live STRIPE_SECRET_KEY) no process may run with one of them, whatever it uses them for.

/** The fixed development values, by the variable dev/start.ts and the payments emulator give them to. */
export const DEV_DEFAULTS = {
  ADMIN_TOKEN: 'dev-admin-token',
  SUPPORT_TOKEN: 'dev-support-token',
  BOT_CHECK_SECRET: 'dev-bot-check-secret-not-for-production',
  STRIPE_WEBHOOK_SECRET: 'whsec_emulator_local',
} as const;

/**
 * Every variable that holds a secret or a token (the table's `secret` rows). Each is compared with
 * every development value: a dev value pasted under another name (the printed buyer-token secret as
 * ROOM_TOKEN_SECRET) is as known as under its own.
 */
const SECRET_VARIABLES = VARIABLES.filter((v) => v.secret).map((v) => v.name);

/** Where `npm start` keeps its data, the development buyer-token secret among it (FLASH_SALE_DATA_DIR, default .data/). */
export function devDataDir(env: Env): string {
  return path.resolve(env.FLASH_SALE_DATA_DIR || path.join(__dirname, '..', '.data'));
}

/** The buyer-token secret `npm start` made on this machine (random, but printed in its banner). */
function localDevBuyerSecret(env: Env): string | undefined {
  try {
    return devBuyerSecret(devDataDir(env), false) || undefined;
  } catch {
    // An unreadable data folder holds no secret this process could compare with.
    return undefined;
  }
}

/**
 * The refusal of development secrets beside a live Stripe key, as one configuration problem naming
 * every variable that holds one; none without a live key, where they are what `npm start` runs on.
 * Every config loader runs it (config/reader.ts `done`), so the API, the worker and each CLI refuse.
 */
export function devSecretProblems(env: Env): string[] {
  if (!isLiveKey(env.STRIPE_SECRET_KEY ?? '')) return [];
  const known = new Set<string>(Object.values(DEV_DEFAULTS));
  const buyer = localDevBuyerSecret(env);
  if (buyer) known.add(buyer);
  const named = SECRET_VARIABLES.filter((name) => {
    const value = env[name];
    return value !== undefined && known.has(value.trim());
  });
  if (!named.length) return [];
  const which =
    named.length === 1 ? `${named[0]} holds a development value` : `${named.join(', ')} hold development values`;
  return [
    `${which} (npm start's, known to anyone with this repository or its logs) and cannot run with a live STRIPE_SECRET_KEY: set secrets of your own (openssl rand -hex 32)`,
  ];
}
