import { signBuyerToken } from '../../config/buyer-tokens';

// The secrets and tokens the test systems are configured with, and the headers they accept.

export const ADMIN_TOKEN = 'test-admin-token';
export const SUPPORT_TOKEN = 'test-support-token';
export const WEBHOOK_SECRET = 'whsec_test_secret';
/** The HS256 secret the test API verifies buyer tokens with. */
export const BUYER_TOKEN_SECRET = 'test-buyer-token-secret-0123456789abcdef';
/** The secret the test API signs waiting-room tickets and admission tokens with. */
export const ROOM_TOKEN_SECRET = 'test-room-token-secret-0123456789abcdef';
/** The bot check's secret, and a cost a test solves in milliseconds (the default is docs/waiting-room.md's). */
export const BOT_CHECK = { secret: 'test-bot-check-secret-0123456789abcdef', maxNumber: 8 };
/** Support's Authorization header: support may read any purchase. */
export const AS_SUPPORT = { authorization: `Bearer ${SUPPORT_TOKEN}` };

/**
 * An emulator fault for each of the session step's 6 attempts: served, then its answer lost (500).
 * The first opens the session; the others are replays of it under the same key.
 */
export const SESSION_ANSWERS_LOST = {
  path: '/v1/checkout/sessions',
  method: 'POST',
  status: 500,
  count: 6,
  afterServing: true,
};

/** A buyer token for `buyerId` (an hour long), as the merchant's login would issue. */
export function buyerToken(buyerId: string): Promise<string> {
  return signBuyerToken(BUYER_TOKEN_SECRET, buyerId);
}
/** The Authorization header of buyer `buyerId`. */
export async function asBuyer(buyerId: string): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await buyerToken(buyerId)}` };
}
