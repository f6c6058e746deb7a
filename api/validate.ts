import Ajv, { type ErrorObject, type JSONSchemaType } from 'ajv';
import { inspectJson, sanitiseText } from './json-guard';
import { invalid } from './problem';

const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false });

function fieldOf(e: ErrorObject): string {
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') return [base, e.params.missingProperty].filter(Boolean).join('.');
  if (e.keyword === 'additionalProperties') return [base, e.params.additionalProperty].filter(Boolean).join('.');
  return base || 'body';
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
      throw invalid((check.errors ?? []).map((e) => ({ field: fieldOf(e), message: e.message ?? 'is invalid' })));
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
