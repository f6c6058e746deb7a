import test from 'ava';
import { loadNotifyConfig } from '../../../config/notify';
import { isPermanentHttpStatus, isPermanentSmtpCode } from '../../../worker/outbox-channels';
import { backoffMs } from '../../../worker/outbox-sender';

// The outbox sender's arithmetic and its configuration: how long a retry waits, which refusals are
// for good, and what NOTIFY_* accepts. (Deliveries for real: test/worker/outbox-*.test.ts.)

test('the retry waits double each time up to the cap, and the configuration refuses a webhook without its secret', (t) => {
  const none = () => 0;
  t.deepEqual(
    [1, 2, 3, 4, 20].map((n) => backoffMs(n, 1000, 5000, none)),
    [1000, 2000, 4000, 5000, 5000],
  );
  t.is(
    backoffMs(1, 1000, 5000, () => 1),
    800,
    'jitter takes at most 20% off',
  );
  t.throws(() => loadNotifyConfig({ NOTIFY_WEBHOOK_URL: 'https://merchant.test/hook' }), {
    message: /NOTIFY_WEBHOOK_SECRET is required/,
  });
  t.throws(() => loadNotifyConfig({ NOTIFY_WEBHOOK_URL: 'https://m.test', NOTIFY_WEBHOOK_SECRET: 'short' }), {
    message: /at least 32 characters/,
  });
  t.throws(() => loadNotifyConfig({ SMTP_URL: 'smtp://mail.test' }), { message: /NOTIFY_EMAIL_FROM is required/ });
});

test('which refusals are permanent: a 4xx but 408 and 429, an SMTP 5xx but 503; the cap must be a positive integer', (t) => {
  t.deepEqual([400, 404, 410, 422, 408, 429, 500, 503, 302].map(isPermanentHttpStatus), [
    true,
    true,
    true,
    true,
    false,
    false,
    false,
    false,
    false,
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
