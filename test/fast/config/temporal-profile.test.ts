import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { profileFile } from '../../helpers/fixtures';
import { ConfigError, loadCliConfig, loadWorkerConfig } from '../../../config';
import { describeTemporal } from '../../../config/temporal';

// Temporal connection settings come from a TOML profile and TEMPORAL_* variables
// (@temporalio/envconfig), the way the Temporal CLI and every SDK read them. (That a CLI connects
// through a profile: test/config/temporal-profile.test.ts.)

const base = { DATABASE_URL: 'postgres://unused@127.0.0.1:1/x' };

test('TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE override the profile, and alone still work as before', (t) => {
  const file = profileFile(t, '[profile.default]\naddress = "temporal.example:7233"\nnamespace = "sale"\n');
  const overridden = loadCliConfig({ ...base, TEMPORAL_CONFIG_FILE: file, TEMPORAL_ADDRESS: '10.0.0.5:7233' });
  t.is(overridden.temporalAddress, '10.0.0.5:7233');
  t.is(overridden.temporalNamespace, 'sale');
  const plain = loadCliConfig({ ...base, TEMPORAL_CONFIG_FILE: path.join(os.tmpdir(), 'no-such-file.toml') });
  t.like(plain, { temporalAddress: '127.0.0.1:7233', temporalNamespace: 'default' });
  t.is(plain.temporal.tls, undefined, 'plaintext by default');
  const empty = loadCliConfig({ ...base, TEMPORAL_ADDRESS: '', TEMPORAL_NAMESPACE: '' });
  t.like(empty, { temporalAddress: '127.0.0.1:7233', temporalNamespace: 'default' }, 'empty means unset');
});

test('Temporal Cloud: an API key turns TLS on, and the start-up line never shows the key', (t) => {
  const file = profileFile(
    t,
    '[profile.cloud]\naddress = "eu-west-1.aws.api.temporal.io:7233"\nnamespace = "sale.a1b2c"\napi_key = "secret-key-123"\n',
  );
  const config = loadWorkerConfig({
    ...base,
    STRIPE_SECRET_KEY: 'sk_test_x',
    TEMPORAL_CONFIG_FILE: file,
    TEMPORAL_PROFILE: 'cloud',
  });
  t.like(config.temporal, {
    address: 'eu-west-1.aws.api.temporal.io:7233',
    namespace: 'sale.a1b2c',
    apiKey: 'secret-key-123',
    tls: true,
  });
  t.is(describeTemporal(config.temporal), 'eu-west-1.aws.api.temporal.io:7233 (namespace sale.a1b2c, TLS, API key)');
  const fromEnv = loadCliConfig({ ...base, TEMPORAL_ADDRESS: 'x.tmprl.cloud:7233', TEMPORAL_API_KEY: 'k' });
  t.like(fromEnv.temporal, { apiKey: 'k', tls: true });
});

test('a profile that is not in the file, or a file that is not TOML, stops the process naming it', (t) => {
  const file = profileFile(t, '[profile.default]\naddress = "127.0.0.1:7233"\n');
  const missing = t.throws(() => loadCliConfig({ ...base, TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'nope' }), {
    instanceOf: ConfigError,
  });
  t.regex(
    missing.message,
    /Temporal client profile could not be read .*TEMPORAL_CONFIG_FILE=.*Profile 'nope' not found/,
  );
  const broken = profileFile(t, 'this is = not [toml');
  t.throws(() => loadCliConfig({ ...base, TEMPORAL_CONFIG_FILE: broken }), { instanceOf: ConfigError });
});

test('TEMPORAL_TLS is true or false: another spelling stops the process naming it, not a plaintext connection', (t) => {
  t.truthy(loadCliConfig({ ...base, TEMPORAL_TLS: 'true' }).temporal.tls, 'TLS on');
  for (const raw of ['TRUE', 'yes', 'on']) {
    const err = t.throws(() => loadCliConfig({ ...base, TEMPORAL_TLS: raw }), { instanceOf: ConfigError });
    t.regex(err.message, new RegExp(`TEMPORAL_TLS must be true or false, got "${raw}"`));
  }
});
