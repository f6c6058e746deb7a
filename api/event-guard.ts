// A verified webhook body is still only bytes someone signed: before the route reads it, it must
// have the shape of a Stripe event in the fields api/stripe-events.ts reads, and no string in it
// may carry what Postgres cannot store (NUL, a lone surrogate), since ids and reasons from it are
// written. A body that is not an event is refused (400 `bad-signature`: it does not verify as an
// event); odd text inside an event is scrubbed, so a real event is never refused for it.

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const optional = (v: unknown, ok: (x: unknown) => boolean) => v === undefined || v === null || ok(v);
const isString = (v: unknown) => typeof v === 'string';

/** The last second a JavaScript Date can hold. */
const MAX_UNIX_SECONDS = 8.64e12;

/** The fields of `data.object` the route reads, and what each must be when present. */
const OBJECT_FIELDS: Record<string, (v: unknown) => boolean> = {
  id: isString,
  object: isString,
  client_reference_id: isString,
  payment_status: isString,
  currency: isString,
  status: isString,
  failure_reason: isString,
  reason: isString,
  amount_total: Number.isSafeInteger,
  amount: Number.isSafeInteger,
  refunded: (v) => typeof v === 'boolean',
  payment_intent: (v) => isString(v) || (isObject(v) && isString(v.id)),
  metadata: (v) => isObject(v) && Object.values(v).every(isString),
};

/** Why `event` is not a Stripe event the route can read, or null when it is one. */
export function notAnEvent(event: unknown): string | null {
  if (!isObject(event)) return 'the body is not a JSON object';
  if (typeof event.id !== 'string' || event.id.length === 0 || event.id.length > 255) return '`id` is not an event id';
  if (typeof event.type !== 'string' || event.type.length === 0 || event.type.length > 255) return '`type` is missing';
  if (!optional(event.livemode, (v) => typeof v === 'boolean')) return '`livemode` is not a boolean';
  // Every Stripe event has its creation time (Unix seconds); the payment events carry it on.
  if (
    !Number.isSafeInteger(event.created) ||
    (event.created as number) < 0 ||
    (event.created as number) > MAX_UNIX_SECONDS
  ) {
    return '`created` is not a Unix time';
  }
  if (!isObject(event.data) || !isObject(event.data.object)) return '`data.object` is not an object';
  for (const [field, ok] of Object.entries(OBJECT_FIELDS)) {
    if (!optional(event.data.object[field], ok)) return `\`data.object.${field}\` has the wrong type`;
  }
  return null;
}

// eslint-disable-next-line no-control-regex -- NUL is exactly what is looked for
const UNSTORABLE = /\u0000|\p{Cs}/u;

/** Replaces NUL and lone surrogates with U+FFFD in every string and property name, in place. Iterative. */
export function scrubEvent<T>(event: T): T {
  // eslint-disable-next-line no-control-regex -- as above
  const scrub = (s: string) => s.replace(/\u0000|\p{Cs}/gu, '\ufffd');
  const stack: unknown[] = [event];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    const target = node as Record<string, unknown>;
    for (const key of Object.keys(target)) {
      let name = key;
      if (UNSTORABLE.test(key)) {
        name = scrub(key);
        target[name] = target[key];
        delete target[key];
      }
      const value = target[name];
      if (typeof value === 'string') {
        if (UNSTORABLE.test(value)) target[name] = scrub(value);
      } else stack.push(value);
    }
  }
  return event;
}
