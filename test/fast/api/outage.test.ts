import { ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import test from 'ava';
import { isOutage, outageOf } from '../../../api/outage';
import { Problem } from '../../../api/problem';

// Which errors mean an outage (api/outage.ts): a service that cannot serve, not a refused request.
// (What the middleware answers: test/api/outage.test.ts; the real services stopped:
// test/api/outages.test.ts.)

const pgError = (code: string, message = 'pg') => Object.assign(new Error(message), { code, severity: 'FATAL' });
const grpcError = (code: number) => Object.assign(new Error(`${code} grpc`), { code, details: 'x', metadata: {} });

test('Postgres errors of a server that cannot serve are outages; a refused request is not', (t) => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '57014', '08006', '53300']) {
    t.is(outageOf(pgError(code)), 'postgres', code);
  }
  t.is(outageOf(new Error('timeout exceeded when trying to connect')), 'postgres');
  t.is(outageOf(new Error('Connection terminated unexpectedly')), 'postgres');
  t.is(outageOf(new AggregateError([pgError('ECONNREFUSED')], 'connect failed')), 'postgres');
  for (const code of ['23505', '23514', '40001', '22P02']) t.false(isOutage(pgError(code)), code);
  t.false(isOutage(new Error('boom')));
  t.false(isOutage(new Problem(404, 'not-found')));
});

test('Temporal errors of a server that is down or late are outages; a refusal of the request is not', (t) => {
  for (const code of [14, 4, 8]) {
    t.is(outageOf(new ServiceError('Failed to start Workflow', { cause: grpcError(code) })), 'temporal', `${code}`);
  }
  t.is(outageOf(grpcError(14)), 'temporal');
  t.is(outageOf(new ServiceError('Failed to connect', { cause: pgError('ECONNREFUSED') })), 'temporal');
  t.is(outageOf(new ServiceError('Failed to connect')), 'temporal');
  t.false(isOutage(new ServiceError('Invalid', { cause: grpcError(3) })), 'INVALID_ARGUMENT');
  t.false(isOutage(new WorkflowNotFoundError('gone', 'purchase-x', undefined)));
});
