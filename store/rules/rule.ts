import type { ProductTerms } from '../../vocabulary';
import type { PaymentEvidence, RuleRefusal } from '../../vocabulary/rules';
import type { Db } from '../db';

/** One paid purchase, as every rule sees it. */
export interface RuleCase {
  purchaseId: string;
  sku: string;
  quantity: number;
  terms: ProductTerms;
  evidence: PaymentEvidence;
}

/**
 * One purchase rule of a drop: what it applies to (the product's terms), what it reads (the
 * payment's evidence, and the claims it keeps in Postgres) and how it refuses (the refund's
 * notification kind and the buyer's reason). A rule that counts claims a payment once: judging the
 * same purchase again (a retried activity) answers the same.
 */
export interface PurchaseRule {
  readonly name: string;
  appliesTo(terms: ProductTerms): boolean;
  /** Null: the payment may stand. */
  judge(db: Db, c: RuleCase): Promise<RuleRefusal | null>;
}
