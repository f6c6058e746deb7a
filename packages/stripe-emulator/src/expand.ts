import { type StripeApiError, invalidParam, resourceMissing } from './errors';
import type { ListObject, StripeObject } from './objects';
import type { ParamReader } from './params';
import type { EmulatorStore } from './store';

/** Expansion of the fields Stripe lets clients expand on these objects (`expand[]=payment_intent`). */
export function expand(store: EmulatorStore, object: StripeObject, paths: string[], prefix = ''): unknown {
  const out = structuredClone(object) as unknown as Record<string, unknown>;
  const nestedByField = new Map<string, string[]>();
  for (const path of paths) {
    const [field, ...rest] = path.split('.');
    const nested = nestedByField.get(field) ?? [];
    if (rest.length > 0) nested.push(rest.join('.'));
    nestedByField.set(field, nested);
  }
  for (const [field, nested] of nestedByField) {
    const cannot = (): StripeApiError =>
      invalidParam('expand', `This property cannot be expanded (${prefix}${field}).`, 'parameter_invalid');
    const value = out[field];
    if (object.object === 'checkout.session' && field === 'line_items') {
      if (nested.length > 0) throw cannot();
      out.line_items = list(store.getLineItems(object.id), `/v1/checkout/sessions/${object.id}/line_items`);
      continue;
    }
    const target = resolveReference(store, object, field, value);
    if (target === undefined) throw cannot();
    out[field] = target === null ? null : expand(store, target, nested, `${prefix}${field}.`);
  }
  return out;
}

function resolveReference(
  store: EmulatorStore,
  object: StripeObject,
  field: string,
  value: unknown,
): StripeObject | null | undefined {
  const fields: Record<StripeObject['object'], Record<string, (id: string) => StripeObject>> = {
    'checkout.session': { payment_intent: (id) => store.getPaymentIntent(id) },
    payment_intent: {
      latest_charge: (id) => store.getCharge(id),
      payment_method: (id) => store.getPaymentMethod(id),
    },
    charge: { payment_intent: (id) => store.getPaymentIntent(id) },
    refund: { charge: (id) => store.getCharge(id), payment_intent: (id) => store.getPaymentIntent(id) },
    dispute: { charge: (id) => store.getCharge(id), payment_intent: (id) => store.getPaymentIntent(id) },
    payment_method: {},
  };
  const resolve = fields[object.object][field];
  if (!resolve) return undefined;
  return typeof value === 'string' ? resolve(value) : null;
}

export function list<T>(data: T[], url: string, hasMore = false): ListObject<T> {
  return { object: 'list', data, has_more: hasMore, url };
}

/** Newest-first pagination with `limit` and `starting_after`/`ending_before`, as Stripe lists do. */
export function paginate<T extends { id: string }>(
  items: T[],
  params: ParamReader,
  url: string,
  objectName: string,
): ListObject<T> {
  const limit = params.integer('limit', { min: 1 }) ?? 10;
  if (limit > 100) throw invalidParam('limit', 'This value must be less than or equal to 100.');
  const after = params.string('starting_after');
  const before = params.string('ending_before');
  let window = items;
  if (after !== null) {
    const index = items.findIndex((item) => item.id === after);
    if (index < 0) throw resourceMissing(objectName, after, 'starting_after');
    window = items.slice(index + 1);
  } else if (before !== null) {
    const index = items.findIndex((item) => item.id === before);
    if (index < 0) throw resourceMissing(objectName, before, 'ending_before');
    window = items.slice(Math.max(0, index - limit), index);
  }
  return list(window.slice(0, limit), url, window.length > limit);
}

export function expandList<T extends StripeObject>(
  store: EmulatorStore,
  page: ListObject<T>,
  paths: string[],
): unknown {
  const itemPaths = paths.map((path) => {
    if (!path.startsWith('data.')) {
      throw invalidParam(
        'expand',
        `This property cannot be expanded (${path}). You may want to try expanding 'data.${path}' instead.`,
      );
    }
    return path.slice('data.'.length);
  });
  return { ...page, data: page.data.map((item) => expand(store, item, itemPaths)) };
}
