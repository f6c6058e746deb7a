import { confirmationOf, type Confirmation } from '../store/confirmation';
import { isPaid, type PurchaseState } from '../vocabulary';
import type { ApiDeps } from './deps';

// A confirmed purchase's receipt as the API shows it (GET /v1/purchases/:id and the purchase page):
// when it was confirmed and where it ships (migration 033, kept by the saga at confirmation).

/** A paid purchase's receipt (store/confirmation.ts): when it was confirmed, where it ships; nothing before it is paid. */
export async function receiptOf(
  deps: Pick<ApiDeps, 'db'>,
  p: Pick<PurchaseState, 'purchaseId' | 'status'>,
): Promise<Confirmation> {
  return isPaid(p.status) ? confirmationOf(deps.db, p.purchaseId) : {};
}

/** The receipt as GET /v1/purchases/:id adds it: `confirmedAt`, and `shipping` in the API's camelCase. */
export function receiptView(c: Confirmation) {
  const a = c.shipping?.address;
  return {
    ...(c.confirmedAt ? { confirmedAt: c.confirmedAt } : {}),
    ...(a
      ? {
          shipping: {
            ...(c.shipping?.name ? { name: c.shipping.name } : {}),
            address: {
              line1: a.line1 ?? null,
              line2: a.line2 ?? null,
              city: a.city ?? null,
              postalCode: a.postal_code ?? null,
              state: a.state ?? null,
              country: a.country ?? null,
            },
          },
        }
      : {}),
  };
}
