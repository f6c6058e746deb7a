import test from 'ava';
import pg from 'pg';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';

// The stack comes from the environment that `npm test` (test/run.ts) sets up.
function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through \`npm test\``);
  return value;
}

test('Postgres answers queries and the migrations have been applied', async (t) => {
  const client = new pg.Client({ connectionString: env('DATABASE_URL') });
  await client.connect();
  try {
    const one = await client.query<{ one: number }>('SELECT 1 AS one');
    t.is(one.rows[0].one, 1);
    const table = await client.query<{ name: string | null }>("SELECT to_regclass('schema_migrations')::text AS name");
    t.is(table.rows[0].name, 'schema_migrations');
    const applied = await client.query('SELECT version FROM schema_migrations');
    t.true(applied.rowCount! > 0, 'no migration recorded as applied');
  } finally {
    await client.end();
  }
});

test('the Temporal namespace describes and the purchase search attributes are registered with their types', async (t) => {
  const namespace = env('TEMPORAL_NAMESPACE');
  const connection = await Connection.connect({ address: env('TEMPORAL_ADDRESS') });
  try {
    const described = await connection.workflowService.describeNamespace({ namespace });
    t.is(described.namespaceInfo?.name, namespace);
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    t.like(customAttributes ?? {}, {
      PurchaseStatus: encodeSearchAttributeIndexedValueType('KEYWORD'),
      Sku: encodeSearchAttributeIndexedValueType('KEYWORD'),
      BuyerId: encodeSearchAttributeIndexedValueType('KEYWORD'),
      HoldExpiresAt: encodeSearchAttributeIndexedValueType('DATETIME'),
    });
  } finally {
    await connection.close();
  }
});
