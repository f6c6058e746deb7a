// `npm run buyer-token -- <buyerId> [--ttl 1h]`: prints a buyer token (a JWT whose `sub` is the buyer
// id, HS256) that the API accepts, for development and scripts; in production the merchant's login
// issues them. Signs with BUYER_TOKEN_SECRET, or else with the development secret `npm start` keeps in
// its data folder (FLASH_SALE_DATA_DIR, default .data/). Exit 0, 2 on usage or configuration errors.
import { devBuyerSecret, signBuyerToken } from '../config/buyer-tokens';
import { ConfigError, loadBuyerTokenCliConfig } from '../config';
import { devDataDir } from '../config/dev-secrets';
import { parseCommandLine, runCli, UsageError } from './cli';
import { parseDuration } from './temporal-describe';

const USAGE = `usage: npm run buyer-token -- <buyerId> [--ttl 1h]

Prints a buyer token for <buyerId>, valid for --ttl (default 1h; s, m, h, d), to send as
Authorization: Bearer <token> on POST /v1/purchases and the buyer's purchase routes.

Environment: BUYER_TOKEN_SECRET (else the development secret npm start keeps in
FLASH_SALE_DATA_DIR, default .data/), BUYER_TOKEN_ISSUER and BUYER_TOKEN_AUDIENCE (optional).`;

interface Args {
  buyerId: string;
  ttlSeconds: number;
}

function parse(argv: string[]): Args | 'help' {
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

runCli('buyer-token', USAGE, parse, async ({ buyerId, ttlSeconds }) => {
  const dataDir = devDataDir(process.env);
  const secret = process.env.BUYER_TOKEN_SECRET || devBuyerSecret(dataDir, false);
  if (!secret) {
    throw new ConfigError(
      `BUYER_TOKEN_SECRET is not set and ${dataDir} has no development secret (run npm start once)`,
    );
  }
  const config = loadBuyerTokenCliConfig({ ...process.env, BUYER_TOKEN_SECRET: secret });
  console.log(
    await signBuyerToken(config.secret, buyerId, { ttlSeconds, issuer: config.issuer, audience: config.audience }),
  );
  return 0;
});
