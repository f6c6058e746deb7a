import type { ShippingDetails } from './common-types';
import { Problem, invalidParam } from './errors';
import type { CheckoutSession } from './objects';
import type { ParamReader } from './params';

// Shipping-address collection, as Checkout does it: a session created with
// `shipping_address_collection.allowed_countries` asks the buyer for an address (the hosted page's
// form, or `shipping` on POST /_emulator/sessions/:id/pay), and once completed reports it as the
// pinned API version does: `collected_information.shipping_details` ({name, address}).

/** Countries Stripe does not ship to from Checkout (its `allowed_countries` refuses them). */
const UNSUPPORTED = ['AS', 'CX', 'CC', 'CU', 'HM', 'IR', 'KP', 'MH', 'FM', 'NF', 'MP', 'PW', 'SY', 'UM', 'VI'];
const ADDRESS_FIELDS = ['line1', 'line2', 'city', 'postal_code', 'state', 'country'] as const;

/** `shipping_address_collection[allowed_countries][]` of a session create; null when the session collects none. */
export function readShippingCollection(params: ParamReader): string[] | null {
  const collection = params.object('shipping_address_collection');
  if (!collection) return null;
  collection.allowOnly(['allowed_countries']);
  const countries = collection.strings('allowed_countries');
  const name = collection.name('allowed_countries');
  if (countries.length === 0)
    throw invalidParam(name, 'Missing required param: allowed_countries.', 'parameter_missing');
  countries.forEach((c, i) => {
    if (!/^[A-Z]{2}$/.test(c) || UNSUPPORTED.includes(c)) {
      throw invalidParam(`${name}[${i}]`, `Invalid allowed_countries[${i}]: ${c} is not a country Checkout ships to`);
    }
  });
  return countries;
}

/** `shipping: {name, address: {line1, line2?, city, postal_code, state?, country}}` from a control route or the page. */
export function readShipping(value: unknown): ShippingDetails {
  const bad = (detail: string) => new Problem(400, 'invalid_shipping', detail);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw bad('shipping must be an object such as {"name": "Ada", "address": {"line1": "1 Main St", ...}}.');
  }
  const { name, address, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length)
    throw bad(`shipping accepts only name and address, not ${Object.keys(rest).join(', ')}.`);
  if (typeof name !== 'string' || !name.trim() || name.length > 200)
    throw bad('shipping.name must be 1 to 200 characters.');
  if (typeof address !== 'object' || address === null || Array.isArray(address)) {
    throw bad('shipping.address must be an object.');
  }
  const a = address as Record<string, unknown>;
  const unknown = Object.keys(a).filter((k) => !(ADDRESS_FIELDS as readonly string[]).includes(k));
  if (unknown.length)
    throw bad(`shipping.address accepts only ${ADDRESS_FIELDS.join(', ')}, not ${unknown.join(', ')}.`);
  const text = (k: (typeof ADDRESS_FIELDS)[number], required: boolean): string | null => {
    const v = a[k];
    if (v === undefined || v === null || v === '') {
      if (required) throw bad(`shipping.address.${k} is required.`);
      return null;
    }
    if (typeof v !== 'string' || v.length > 200)
      throw bad(`shipping.address.${k} must be text of at most 200 characters.`);
    return v;
  };
  const country = text('country', true)!.toUpperCase();
  if (!/^[A-Z]{2}$/.test(country)) throw bad('shipping.address.country must be a two-letter ISO code such as DE.');
  return {
    name,
    address: {
      line1: text('line1', true),
      line2: text('line2', false),
      city: text('city', true),
      postal_code: text('postal_code', false),
      state: text('state', false),
      country,
    },
  };
}

/** The hosted page's address form, posted as `shipping[name]`, `shipping[line1]`, …: the shipping object, or null. */
export function readShippingForm(form: URLSearchParams): ShippingDetails | null {
  if (!form.has('shipping[name]')) return null;
  const field = (k: string) => form.get(`shipping[${k}]`) ?? undefined;
  return readShipping({
    name: field('name'),
    address: Object.fromEntries(
      ADDRESS_FIELDS.map((k): [string, string | undefined] => [k, field(k)]).filter(([, v]) => v !== undefined),
    ),
  });
}

/**
 * What paying a session that collects an address needs: the buyer's address, in one of its
 * countries (Checkout does not let a buyer pay without one). Sessions that collect none ignore it.
 */
export function requireShipping(session: CheckoutSession, shipping: ShippingDetails | undefined): void {
  const allowed = session.shipping_address_collection?.allowed_countries;
  if (!allowed) return;
  if (!shipping) {
    throw new Problem(
      400,
      'shipping_required',
      `Checkout Session ${session.id} collects a shipping address: pass shipping.`,
    );
  }
  if (!allowed.includes(shipping.address.country!)) {
    throw new Problem(400, 'shipping_country', `Checkout Session ${session.id} ships only to ${allowed.join(', ')}.`);
  }
}

/** Records the address on a completed session, where Stripe reports it. */
export function collectShipping(session: CheckoutSession, shipping: ShippingDetails | undefined): void {
  if (!session.shipping_address_collection || !shipping) return;
  session.collected_information = { business_name: null, individual_name: null, shipping_details: shipping };
}

const esc = (v: string) =>
  v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** The address fields of the hosted page's payment form, for a session that collects one. */
export function shippingFields(session: CheckoutSession): string {
  const allowed = session.shipping_address_collection?.allowed_countries;
  if (!allowed) return '';
  const input = (k: string, label: string, required: boolean, value = '') =>
    `<label>${label}<input name="shipping[${k}]" id="shipping-${k.replace('_', '-')}" value="${esc(value)}"${required ? ' required' : ''}></label>`;
  const options = allowed.map((c) => `<option value="${c}">${c}</option>`).join('');
  return `<fieldset class="shipping"><legend>Shipping address</legend>
    ${input('name', 'Full name', true, 'Test Buyer')}
    ${input('line1', 'Address line 1', true)}
    ${input('line2', 'Address line 2 (optional)', false)}
    ${input('city', 'City', true)}
    ${input('postal_code', 'Postal code', false)}
    ${input('state', 'State or region (optional)', false)}
    <label>Country<select name="shipping[country]" id="shipping-country">${options}</select></label>
  </fieldset>`;
}
