// The command line of `npm run buyer-token` (ops/buyer-token.ts runs it): its usage and its parsing,
// apart from the signing so the fast tier tests them.
import { parseCommandLine, UsageError } from './cli-args';
import { parseDuration } from './temporal-describe';

export const USAGE = `usage: npm run buyer-token -- <buyerId> [--ttl 1h]

Prints a buyer token for <buyerId>, valid for --ttl (default 1h; s, m, h, d), to send as
Authorization: Bearer <token> on POST /v1/purchases and the buyer's purchase routes.

Environment: BUYER_TOKEN_SECRET (else the development secret npm start keeps in
FLASH_SALE_DATA_DIR, default .data/), BUYER_TOKEN_ISSUER and BUYER_TOKEN_AUDIENCE (optional).`;

export interface BuyerTokenArgs {
  buyerId: string;
  ttlSeconds: number;
}

export function parse(argv: string[]): BuyerTokenArgs | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    ttl: { type: 'string', default: '1h' },
    help: { type: 'boolean', short: 'h', default: false },
  });
  if (values.help) return 'help';
  const [buyerId, ...extra] = positionals;
  if (!buyerId?.trim()) throw new UsageError('missing <buyerId>');
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  if (buyerId.length > 128 || /[\p{Cc}\p{Cs}]/u.test(buyerId)) {
    throw new UsageError('<buyerId> must be 1 to 128 printable characters');
  }
  const ms = parseDuration(String(values.ttl));
  if (!ms || ms < 1000) throw new UsageError(`--ttl must be a duration such as 30m or 2h, got "${values.ttl}"`);
  return { buyerId, ttlSeconds: Math.round(ms / 1000) };
}
