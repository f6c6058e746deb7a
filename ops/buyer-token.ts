// `npm run buyer-token -- <buyerId> [--ttl 1h]`: prints a buyer token (a JWT whose `sub` is the buyer
// id, HS256) that the API accepts, for development and scripts; in production the merchant's login
// issues them. Signs with BUYER_TOKEN_SECRET, or else with the development secret `npm start` keeps in
// its data folder (FLASH_SALE_DATA_DIR, default .data/). Exit 0, 2 on usage or configuration errors.
import { devBuyerSecret, signBuyerToken } from '../config/buyer-tokens';
import { ConfigError, loadBuyerTokenCliConfig } from '../config';
import { devDataDir } from '../config/dev-secrets';
import { runCli } from './cli';
import { parse, USAGE } from './buyer-token-args';

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
