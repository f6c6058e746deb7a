import type { PurchaseRule } from './rule';

// The payment methods a product accepts (`acceptedPaymentMethods`: Stripe's type names, such as
// `card` or `sepa_debit`): a payment by any other is refunded with the reason. Added through the
// rules module alone: its term, its check and its refusal are here.

const TERM = 'acceptedPaymentMethods';

/** Stripe's type names as a buyer reads them: `sepa_debit` → "SEPA debit"; one not listed with its underscores as spaces. */
const METHOD_NAMES: Record<string, string> = {
  card: 'card',
  sepa_debit: 'SEPA debit',
  bacs_debit: 'Bacs debit',
  us_bank_account: 'US bank account',
  link: 'Link',
};
const methodName = (type: string) => METHOD_NAMES[type] ?? type.replace(/_/g, ' ');

/**
 * The types a Checkout Session's `allowed_payment_method_types` takes (stripe-node 23's list). A product
 * naming another would have every live session refused, and each purchase fail. Wallets are not
 * among them: Apple Pay and Google Pay are `card` payments.
 */
export const CHECKOUT_METHOD_TYPES = [
  'acss_debit',
  'affirm',
  'afterpay_clearpay',
  'alipay',
  'alma',
  'amazon_pay',
  'au_becs_debit',
  'bacs_debit',
  'bancontact',
  'billie',
  'bizum',
  'blik',
  'boleto',
  'card',
  'cashapp',
  'crypto',
  'customer_balance',
  'eps',
  'fpx',
  'giropay',
  'grabpay',
  'ideal',
  'kakao_pay',
  'klarna',
  'konbini',
  'kr_card',
  'link',
  'mb_way',
  'mobilepay',
  'multibanco',
  'naver_pay',
  'nz_bank_account',
  'oxxo',
  'p24',
  'pay_by_bank',
  'payco',
  'paynow',
  'paypal',
  'paypay',
  'payto',
  'pix',
  'promptpay',
  'revolut_pay',
  'samsung_pay',
  'satispay',
  'scalapay',
  'sepa_debit',
  'sequra',
  'sofort',
  'sunbit',
  'swish',
  'twint',
  'upi',
  'us_bank_account',
  'wechat_pay',
  'zip',
] as const;

export const acceptedPaymentMethods: PurchaseRule = {
  name: 'accepted_payment_methods',
  term: {
    name: TERM,
    schema: {
      type: 'array',
      nullable: true,
      minItems: 1,
      maxItems: 20,
      uniqueItems: true,
      items: { type: 'string', enum: CHECKOUT_METHOD_TYPES },
    },
  },
  appliesTo: (terms) => Array.isArray(terms.rules?.[TERM]),
  checkoutMethods: (terms) => terms.rules![TERM] as string[],
  inWords: (terms) => `Paid only by ${(terms.rules![TERM] as string[]).map(methodName).join(' or ')}.`,
  refusalInWords: (reason, p) => {
    const by = / only, not by ([a-z_]+)$/.exec(reason)?.[1];
    const accepted = p.terms.rules?.[TERM] as string[] | undefined;
    if (!by || !accepted || !reason.startsWith(`${p.sku} is sold for payment by `)) return null;
    return `${p.name} can be paid only by ${accepted.map(methodName).join(' or ')}, not by ${methodName(by)}`;
  },
  judge(_db, c) {
    const accepted = c.terms.rules![TERM] as string[];
    const type = c.evidence.method?.type;
    // Stripe named no method: nothing to judge.
    if (!type || accepted.includes(type)) return Promise.resolve(null);
    return Promise.resolve({
      rule: this.name,
      kind: 'refunded_payment_method',
      reason: `${c.sku} is sold for payment by ${accepted.join(', ')} only, not by ${type}`,
    });
  },
};
