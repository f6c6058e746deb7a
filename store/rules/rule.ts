import type { ProductTerms } from '../../vocabulary';
import type { PaymentEvidence, RuleRefusal } from '../../vocabulary/rules';
import type { Db } from '../db';

/** The product of a refused payment, as its buyer's page names it. */
export interface RefusedProduct {
  sku: string;
  name: string;
  terms: ProductTerms;
}

/** The most units one purchase may take, and the product term that says so (`maxPerAddress`). */
export interface PerPurchaseCap {
  max: number;
  term: string;
}

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
  /**
   * The product term that switches the rule on, when the rule brings its own: its name on
   * `POST /v1/products` and `GET /v1/products/:sku`, and its JSON schema. The product keeps it
   * (`rule_terms`), and a purchase carries it in `terms.rules[name]`.
   */
  readonly term?: { name: string; schema: Record<string, unknown> };
  appliesTo(terms: ProductTerms): boolean;
  /** The rule in the buyer's words, shown beside the price before they pay: "At most 1 per shipping address". */
  inWords(terms: ProductTerms): string;
  /**
   * The most units one purchase may take under the rule (one purchase pays with one method and ships
   * to one address), and the product term that sets it: the Buy form's quantity is capped by the
   * smallest, and the API refuses a purchase of more. Absent: no cap of its own.
   */
  perPurchase?(terms: ProductTerms): PerPurchaseCap;
  /**
   * A refusal's `reason` (as the purchase keeps it) in the buyer's words, naming the product (the
   * page around it says the money went back); null when the reason is not this rule's.
   */
  refusalInWords(reason: string, product: RefusedProduct): string | null;
  /**
   * The payment methods (Stripe's type names) Checkout may offer a product the rule applies to:
   * where Stripe can prevent a payment the rule would refuse, the session does not offer it.
   */
  checkoutMethods?(terms: ProductTerms): readonly string[];
  /** Null: the payment may stand. */
  judge(db: Db, c: RuleCase): Promise<RuleRefusal | null>;
}
