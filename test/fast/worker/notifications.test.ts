import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { PermanentFailure } from '../../../activities/notifications';
import { loadNotifyConfig } from '../../../config/notify';
import {
  configuredChannels,
  isPermanentHttpStatus,
  isPermanentSmtpCode,
  signDelivery,
  webhookSecretWarning,
} from '../../../worker/notification-channels';

// Buyer notifications' configuration and which refusals are for good. (The workflow's branches:
// test/fast/workflows/notification.test.ts; deliveries for real: test/worker/notification-*.test.ts.)

test('the configuration refuses a webhook without its secret, or with a short one, and email without a sender', (t) => {
  t.throws(() => loadNotifyConfig({ NOTIFY_WEBHOOK_URL: 'https://merchant.test/hook' }), {
    message: /NOTIFY_WEBHOOK_SECRET is required/,
  });
  t.throws(() => loadNotifyConfig({ NOTIFY_WEBHOOK_URL: 'https://m.test', NOTIFY_WEBHOOK_SECRET: 'short' }), {
    message: /at least 32 characters/,
  });
  t.throws(() => loadNotifyConfig({ SMTP_URL: 'smtp://mail.test' }), { message: /NOTIFY_EMAIL_FROM is required/ });
  // Temporal would refuse the delivery's retry policy: refused at start instead.
  t.throws(() => loadNotifyConfig({ NOTIFY_RETRY_BASE_MS: '5000', NOTIFY_RETRY_MAX_MS: '1000' }), {
    message: /NOTIFY_RETRY_MAX_MS \(1000\) must be at least NOTIFY_RETRY_BASE_MS \(5000\)/,
  });
});

test('which refusals are permanent: a redirect, a 4xx but 408 and 429, an SMTP 5xx but 503; the cap must be a positive integer', (t) => {
  t.deepEqual([400, 404, 410, 422, 408, 429, 500, 503, 302, 308].map(isPermanentHttpStatus), [
    true,
    true,
    true,
    true,
    false,
    false,
    false,
    false,
    true,
    true,
  ]);
  t.deepEqual([550, 553, 554, 503, 421, 450, undefined].map(isPermanentSmtpCode), [
    true,
    true,
    true,
    false,
    false,
    false,
    false,
  ]);
  t.like(loadNotifyConfig({}), { maxAttempts: 20, maxAgeMs: 259_200_000 });
  t.throws(() => loadNotifyConfig({ NOTIFY_MAX_ATTEMPTS: '0' }), {
    message: /NOTIFY_MAX_ATTEMPTS must be an integer >= 1/,
  });
});

test('a webhook that answers with a redirect is not followed: the delivery is dead at once, naming where it pointed', async (t) => {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.writeHead(301, { location: 'https://merchant.test/new-hook' }).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const [webhook] = configuredChannels(
    loadNotifyConfig({
      NOTIFY_WEBHOOK_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      NOTIFY_WEBHOOK_SECRET: 'whsec_' + Buffer.from('a-secret-of-thirty-two-bytes-at-least').toString('base64'),
    }),
    () => {},
  );
  const message = {
    id: '7',
    channel: 'webhook',
    purchaseId: 'pur_1',
    buyerId: 'b',
    kind: 'refunded_by_support',
    message: 'refunded',
    createdAt: new Date(0).toISOString(),
    attempts: 1,
  };
  const err = await t.throwsAsync(webhook.send(message));
  t.true(err instanceof PermanentFailure, String(err));
  t.regex(err.message, /answered 301, a redirect to https:\/\/merchant\.test\/new-hook/);
  t.deepEqual(hits, ['/hook'], 'sent once, to the configured address only');
});

test('a webhook secret without whsec_ is named at start, with the whsec_ form that signs the same', (t) => {
  const plain = 'a-plain-secret-of-thirty-two-bytes-or-more';
  const config = (secret: string) =>
    loadNotifyConfig({ NOTIFY_WEBHOOK_URL: 'https://merchant.test/hook', NOTIFY_WEBHOOK_SECRET: secret });
  t.regex(webhookSecretWarning(config(plain)) ?? '', /no whsec_ prefix.*base64/);
  t.false((webhookSecretWarning(config(plain)) ?? '').includes(plain), 'the secret itself is not logged');
  const standard = `whsec_${Buffer.from(plain).toString('base64')}`;
  t.is(webhookSecretWarning(config(standard)), undefined);
  t.is(webhookSecretWarning(loadNotifyConfig({})), undefined);
  // What the warning promises: the whsec_ form of the same bytes signs the same.
  t.is(signDelivery(standard, 'ntf_1', 1, '{}'), signDelivery(plain, 'ntf_1', 1, '{}'));
});
