import type { Router } from '@koa/router';

import { optionalChoice, optionalInteger, readJson } from './body';
import { DISPUTE_OUTCOMES, DISPUTE_REASONS } from './disputes';
import { Problem, StripeApiError } from './errors';
import { REFUND_FAILURE_REASONS } from './refunds';
import type { NewRefundStatus } from './state';
import type { EmulatorStore } from './store';

const REFUND_STATUSES: readonly NewRefundStatus[] = ['succeeded', 'pending'];
const REFUND_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;

/**
 * Control routes for what happens to money after a payment: account settings (how refunds start),
 * refunds settling or failing, refunds made from the Dashboard, and disputes.
 */
export function moneyControlRoutes(router: Router, store: EmulatorStore): void {
  router.get('/settings', (ctx) => {
    ctx.body = store.settings;
  });

  /** `{refundStatus?: 'succeeded' | 'pending'}`: how refunds created from now on start. */
  router.post('/settings', async (ctx) => {
    const body = await readJson(ctx);
    const refundStatus = optionalChoice(body, 'refundStatus', REFUND_STATUSES);
    ctx.body = store.configure(refundStatus ? { refundStatus } : {});
  });

  /** A pending refund goes through (events `refund.updated`, `charge.refunded`). */
  router.post('/refunds/:id/succeed', (ctx) => {
    ctx.body = store.refunds.settle(ctx.params.id);
  });

  /**
   * `{failure_reason?}`: a pending or succeeded refund fails and its amount goes back to the charge
   * (events `refund.updated` with status failed, `refund.failed`).
   */
  router.post('/refunds/:id/fail', async (ctx) => {
    const body = await readJson(ctx);
    const reason = optionalChoice(body, 'failure_reason', REFUND_FAILURE_REASONS);
    ctx.body = store.refunds.fail(ctx.params.id, reason);
  });

  /**
   * `{amount?, reason?}`: a refund made outside the service, as from the Dashboard (no metadata); the
   * same rules and events as `POST /v1/refunds`.
   */
  router.post('/payment_intents/:id/refund', async (ctx) => {
    const body = await readJson(ctx);
    const amount = optionalInteger(body, 'amount', 1, Number.MAX_SAFE_INTEGER);
    const reason = optionalChoice(body, 'reason', REFUND_REASONS);
    ctx.body = stripeErrorsAsProblems(() => store.refunds.fromDashboard(ctx.params.id, { amount, reason }));
  });

  /**
   * `{reason?, outcome?}`: the buyer disputes the payment (events `charge.dispute.created`,
   * `charge.dispute.funds_withdrawn`); called again, the dispute closes `won` or `lost` (default).
   */
  router.post('/payment_intents/:id/dispute', async (ctx) => {
    const body = await readJson(ctx);
    const reason = optionalChoice(body, 'reason', DISPUTE_REASONS);
    const outcome = optionalChoice(body, 'outcome', DISPUTE_OUTCOMES);
    ctx.body = store.disputes.disputePayment(ctx.params.id, { reason, outcome });
  });

  /** `{outcome: 'won' | 'lost'}`: the dispute closes (event `charge.dispute.closed`). */
  router.post('/disputes/:id/close', async (ctx) => {
    const body = await readJson(ctx);
    const outcome = optionalChoice(body, 'outcome', DISPUTE_OUTCOMES);
    if (!outcome) throw new Problem(400, 'invalid_outcome', 'outcome must be one of won, lost.');
    ctx.body = store.disputes.close(ctx.params.id, outcome);
  });
}

/** Stripe's refusal (nothing left to refund, a disputed charge) as a problem with Stripe's code. */
function stripeErrorsAsProblems<T>(action: () => T): T {
  try {
    return action();
  } catch (error) {
    if (error instanceof StripeApiError) {
      throw new Problem(error.status, error.details.code ?? 'invalid_request', error.message);
    }
    throw error;
  }
}
