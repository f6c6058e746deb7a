import test from 'ava';
import { profileFile } from '../helpers/fixtures';
import { Client } from '@temporalio/client';
import { loadCliConfig } from '../../config';
import { connectTemporal } from '../../config/clients';
import { temporalAddress } from '../helpers/system';

// Temporal connection settings come from a TOML profile and TEMPORAL_* variables
// (@temporalio/envconfig), the way the Temporal CLI and every SDK read them. Here a CLI connects
// through a profile; how the settings are read: test/fast/config/temporal-profile.test.ts.

const base = { DATABASE_URL: 'postgres://unused@127.0.0.1:1/x' };

test('a CLI connects to Temporal through the profile of a TOML file named by TEMPORAL_CONFIG_FILE', async (t) => {
  const file = profileFile(
    t,
    `[profile.default]\naddress = "127.0.0.1:1"\n\n[profile.sale]\naddress = "${temporalAddress()}"\nnamespace = "default"\n`,
  );
  const config = loadCliConfig({ ...base, TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'sale' });
  t.is(config.temporalAddress, temporalAddress());
  t.is(config.temporalNamespace, 'default');
  const connection = await connectTemporal(config.temporal);
  try {
    const client = new Client({ connection, namespace: config.temporalNamespace });
    const info = await client.workflowService.getSystemInfo({});
    t.truthy(info.serverVersion, 'the server answered');
  } finally {
    await connection.close();
  }
});
