import { Router } from '@koa/router';
import {
  createProduct,
  getProduct,
  OrderTooLargeError,
  ProductExistsError,
  restockProduct,
  TotalTooLargeError,
  type NewProduct,
} from '../../store/products';
import { requireBearer } from '../auth';
import { productView } from '../catalogue-view';
import type { ApiDeps } from '../deps';
import { invalid, Problem } from '../problem';
import { INSTANT_PATTERN, instantOf, validator } from '../validate';
import type { JSONSchemaType } from 'ajv';
import { RULE_TERM_SCHEMAS, splitRuleTerms } from '../../store/rules';
import {
  MAX_HOLD_GRACE_SECONDS,
  MAX_HOLD_SECONDS,
  STRIPE_MAX_CHARGE_CENTS,
  STRIPE_MIN_CHARGE,
  STRIPE_MAX_SESSION_SECONDS,
} from '../../vocabulary/limits';

/** Every ISO 4217 currency code this runtime knows (upper-case). */
const ISO_CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

type ProductBody = Omit<NewProduct, 'ruleTerms'> & { maxPerPaymentMethod?: number | null };

const productBody: JSONSchemaType<ProductBody> = {
  type: 'object',
  additionalProperties: false,
  required: ['sku', 'name', 'priceCents', 'currency', 'stock'],
  properties: {
    sku: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    priceCents: { type: 'integer', minimum: 0, maximum: STRIPE_MAX_CHARGE_CENTS },
    currency: { type: 'string', pattern: '^[A-Za-z]{3}$' },
    stock: { type: 'integer', minimum: 0, maximum: 10_000_000 },
    buckets: { type: 'integer', minimum: 1, maximum: 64, nullable: true },
    holdSeconds: { type: 'integer', minimum: 1, maximum: MAX_HOLD_SECONDS, nullable: true },
    // A payment made in time and reported late sells the hold itself within this while past the lapse.
    holdGraceSeconds: { type: 'integer', minimum: 0, maximum: MAX_HOLD_GRACE_SECONDS, nullable: true },
    maxPerBuyer: { type: 'integer', minimum: 1, maximum: 1000, nullable: true },
    // Units one payment method (a card, a bank account) may buy; `maxPerCard` is its old name.
    maxPerPaymentMethod: { type: 'integer', minimum: 1, maximum: 1_000_000, nullable: true },
    maxPerCard: { type: 'integer', minimum: 1, maximum: 1_000_000, nullable: true },
    // Units one shipping address may buy: Checkout collects the address (shippingCountries).
    maxPerAddress: { type: 'integer', minimum: 1, maximum: 1_000_000, nullable: true },
    shippingCountries: {
      type: 'array',
      nullable: true,
      minItems: 1,
      maxItems: 250,
      uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Z]{2}$' },
    },
    // A join (with a room) or a purchase (without) needs a solved proof-of-work challenge.
    botCheck: { type: 'boolean', nullable: true },
    oversellAllowance: { type: 'integer', minimum: 0, maximum: 1_000_000, nullable: true },
    waitingRoom: {
      type: 'object',
      nullable: true,
      additionalProperties: false,
      required: ['maxActive'],
      properties: {
        // Left out (or null): the room admits at the Stripe budget's pace, less what waits for it.
        admitPerSecond: { type: 'number', exclusiveMinimum: 0, maximum: 100_000, nullable: true },
        maxActive: { type: 'integer', minimum: 1, maximum: 10_000_000 },
        // An admission outlives no Stripe session; a second is the shortest that can buy.
        sessionSeconds: { type: 'integer', minimum: 1, maximum: STRIPE_MAX_SESSION_SECONDS, nullable: true },
      },
    },
    opensAt: {
      type: 'string',
      pattern: INSTANT_PATTERN,
      nullable: true,
    },
    units: {
      type: 'array',
      nullable: true,
      minItems: 1,
      maxItems: 100_000,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 64 },
    },
  },
};

/**
 * The body of POST /v1/products: the product's own fields and the term of every rule of the rules
 * module that has one (store/rules/), each checked against the rule's own schema.
 */
const newProduct = validator<ProductBody>({
  ...productBody,
  properties: { ...productBody.properties, ...RULE_TERM_SCHEMAS },
} as unknown as JSONSchemaType<ProductBody>);

/** Countries Checkout's `shipping_address_collection.allowed_countries` does not take (Stripe's list). */
const STRIPE_UNSHIPPABLE = ['AS', 'CX', 'CC', 'CU', 'HM', 'IR', 'KP', 'MH', 'FM', 'NF', 'MP', 'PW', 'SY', 'UM', 'VI'];

/** Region codes that name no country (a union, the world, an old alias): Stripe's list has none of them. */
const NOT_COUNTRIES: Readonly<Record<string, string>> = {
  UK: 'the United Kingdom is GB',
  EU: 'the European Union is no country: name its members',
  EZ: 'the eurozone is no country: name its members',
  UN: 'the United Nations is no country',
  QO: 'Outlying Oceania is no country',
};
const regionNames = new Intl.DisplayNames('en', { type: 'region', fallback: 'none' });

/** Why `code` is no country Stripe Checkout ships to, or undefined when it may be one. */
function notACountry(code: string): string | undefined {
  if (NOT_COUNTRIES[code]) return `${code}: ${NOT_COUNTRIES[code]}`;
  if (regionNames.of(code) === undefined) return `${code} is no ISO 3166-1 country code`;
  return undefined;
}

const restock = validator<{ quantity: number }>({
  type: 'object',
  additionalProperties: false,
  required: ['quantity'],
  properties: { quantity: { type: 'integer', minimum: 1, maximum: 10_000_000 } },
});

/**
 * Catalogue routes. Creating and restocking need the admin token; reading is public. Each write is
 * one transaction with its ledger movement. A product whose largest order (priceCents × maxPerBuyer)
 * is more than Stripe can charge is refused, 400 naming `priceCents`, before anything is written; a
 * restock changes neither, so it needs no such check. A restock that would take the total past
 * MAX_TOTAL (store/products.ts) is refused, 400 naming `quantity`, by the same conditional UPDATE
 * that would have applied it.
 */
export function catalogueRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const admin = requireBearer(deps.adminToken, 'admin');

  router.post('/v1/products', admin, async (ctx) => {
    const { maxPerPaymentMethod, ...sent } = newProduct(ctx.request.body);
    if (maxPerPaymentMethod != null && sent.maxPerCard != null && maxPerPaymentMethod !== sent.maxPerCard) {
      throw invalid([
        { field: 'maxPerPaymentMethod', message: 'differs from maxPerCard, its old name: send one of the two' },
      ]);
    }
    const { own, ruleTerms } = splitRuleTerms(sent);
    const input: NewProduct = { ...own, maxPerCard: maxPerPaymentMethod ?? sent.maxPerCard, ruleTerms };
    if (input.units && input.units.length !== input.stock) {
      throw invalid([{ field: 'stock', message: `must equal the number of units (${input.units.length})` }]);
    }
    if (!ISO_CURRENCIES.has(input.currency.toUpperCase())) {
      // Three letters that name no currency (a typo): Stripe would refuse every session.
      throw invalid([{ field: 'currency', message: `must be an ISO 4217 currency code (usd, eur, ...)` }]);
    }
    const minimum = STRIPE_MIN_CHARGE[input.currency.toLowerCase()];
    if (minimum !== undefined && input.priceCents < minimum) {
      // Stripe refuses the session: every purchase would take a hold and then fail.
      throw invalid([
        {
          field: 'priceCents',
          message: `must be at least ${minimum}: Stripe's smallest charge in ${input.currency.toUpperCase()}`,
        },
      ]);
    }
    if (input.opensAt && !instantOf(input.opensAt)) {
      throw invalid([{ field: 'opensAt', message: 'must be a real ISO-8601 time (2025-11-28T09:00:00Z)' }]);
    }
    if (input.maxPerAddress && !input.shippingCountries?.length) {
      throw invalid([
        { field: 'shippingCountries', message: 'is required with maxPerAddress (where may buyers ship?)' },
      ]);
    }
    const unknown = (input.shippingCountries ?? []).flatMap((c) => notACountry(c) ?? []);
    if (unknown.length) throw invalid([{ field: 'shippingCountries', message: unknown.join('; ') }]);
    const unshippable = (input.shippingCountries ?? []).filter((c) => STRIPE_UNSHIPPABLE.includes(c));
    if (unshippable.length) {
      throw invalid([
        { field: 'shippingCountries', message: `Stripe Checkout cannot ship to ${unshippable.join(', ')}` },
      ]);
    }
    if (input.units && input.oversellAllowance) {
      throw invalid([{ field: 'oversellAllowance', message: 'is not supported for products of distinct units' }]);
    }
    try {
      await createProduct(deps.db, input);
    } catch (err) {
      if (err instanceof ProductExistsError) throw new Problem(409, 'product-exists', err.message);
      // The price is what a product's largest order multiplies: name it (the message names maxPerBuyer too).
      if (err instanceof OrderTooLargeError) throw invalid([{ field: 'priceCents', message: err.message }]);
      throw err;
    }
    await deps.admissions.stockChanged(input.sku);
    deps.catalogue.changed();
    ctx.status = 201;
    ctx.body = await productView(deps, input.sku);
  });

  router.post('/v1/products/:sku/restock', admin, async (ctx) => {
    const { quantity } = restock(ctx.request.body);
    const notFound = () => new Problem(404, 'product-not-found', `no product with SKU ${ctx.params.sku}`);
    const product = await getProduct(deps.db, ctx.params.sku);
    if (!product) throw notFound();
    if (product.hasUnits) {
      throw invalid([{ field: 'quantity', message: 'a product of distinct units is restocked by its refunded units' }]);
    }
    try {
      if (!(await restockProduct(deps.db, ctx.params.sku, quantity))) throw notFound();
    } catch (err) {
      if (err instanceof TotalTooLargeError) throw invalid([{ field: 'quantity', message: err.message }]);
      throw err;
    }
    await deps.admissions.stockChanged(ctx.params.sku);
    deps.catalogue.changed();
    ctx.body = await productView(deps, ctx.params.sku);
  });

  router.get('/v1/products/:sku', async (ctx) => {
    ctx.body = await productView(deps, ctx.params.sku);
  });

  return router;
}
