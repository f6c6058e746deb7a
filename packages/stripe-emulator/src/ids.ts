import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomToken(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return out;
}

/** Ids shaped like Stripe's: `cs_test_` + 58 characters for sessions, `pi_` + 24 for most objects. */
export const newId = {
  checkoutSession: (): string => `cs_test_${randomToken(58)}`,
  paymentIntent: (): string => `pi_${randomToken(24)}`,
  charge: (): string => `ch_${randomToken(24)}`,
  refund: (): string => `re_${randomToken(24)}`,
  dispute: (): string => `dp_${randomToken(24)}`,
  event: (): string => `evt_${randomToken(24)}`,
  paymentMethod: (): string => `pm_${randomToken(24)}`,
  mandate: (): string => `mandate_${randomToken(24)}`,
  request: (): string => `req_${randomToken(14)}`,
  clientSecret: (paymentIntentId: string): string => `${paymentIntentId}_secret_${randomToken(25)}`,
};
