import Ajv, { type ErrorObject, type JSONSchemaType } from 'ajv';
import { sanitiseText } from '../vocabulary/text';
import { inspectJson } from './json-guard';
import { invalid } from './problem';

const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false });

function fieldOf(e: ErrorObject): string {
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') return [base, e.params.missingProperty].filter(Boolean).join('.');
  if (e.keyword === 'additionalProperties') return [base, e.params.additionalProperty].filter(Boolean).join('.');
  return base || 'body';
}

/** Ajv's message, and for a value outside a list the values it may take (Ajv says only "one of the allowed values"). */
function messageOf(e: ErrorObject): string {
  if (e.keyword === 'enum') {
    // A nullable list names null among its values: null is taken as left out, so it is not offered.
    const values = (e.params.allowedValues as unknown[]).filter((v) => v !== null);
    return `must be one of ${values.map((v) => JSON.stringify(v).replace(/^"|"$/g, '')).join(', ')}`;
  }
  return e.message ?? 'is invalid';
}

export interface ValidatorOptions<T> {
  /**
   * Top-level free-text fields that are sanitised instead of refused: control characters become
   * spaces, lone surrogates U+FFFD, the ends are trimmed, and a field left empty is refused.
   */
  sanitise?: readonly (keyof T & string)[];
}

/**
 * A validator for one JSON body shape: returns the typed value or throws 400 `invalid-request`
 * naming every bad field. Before the schema, every string and property name of the body (at any
 * depth, which is bounded) is checked: a control character or a lone surrogate is refused, since
 * Postgres could not store it.
 */
export function validator<T>(schema: JSONSchemaType<T>, opts: ValidatorOptions<T> = {}): (body: unknown) => T {
  const check = ajv.compile(schema);
  const sanitise = opts.sanitise ?? [];
  return (body) => {
    const faults = inspectJson(body, { skip: sanitise });
    if (faults.length > 0) throw invalid(faults);
    const value = body === undefined || body === null ? {} : structuredClone(body);
    if (!check(value)) {
      throw invalid((check.errors ?? []).map((e) => ({ field: fieldOf(e), message: messageOf(e) })));
    }
    const fields = value as Record<string, unknown>;
    for (const name of sanitise) {
      if (typeof fields[name] !== 'string') continue;
      fields[name] = sanitiseText(fields[name]);
      if (fields[name] === '') throw invalid([{ field: name, message: 'must contain a visible character' }]);
    }
    return value;
  };
}

/** What the API's ISO-8601 times look like: seconds and their fraction optional, `Z` or an offset. */
export const INSTANT_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})$';

/**
 * The time an ISO-8601 text of INSTANT_PATTERN names, or undefined when it names none that Postgres
 * stores: a day the month does not have (JavaScript's Date rolls 30 February on to 2 March), an hour,
 * minute or second out of range, year 0, or an offset past ±15:59.
 */
export function instantOf(text: string): Date | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):(\d{2}))$/.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = m.slice(1).map((n) => Number(n ?? 0));
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const valid =
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    offsetHours <= 15 &&
    offsetMinutes <= 59;
  return valid ? new Date(Date.parse(text)) : undefined;
}
