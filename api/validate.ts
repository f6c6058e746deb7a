import Ajv, { type ErrorObject, type JSONSchemaType } from 'ajv';
import { invalid } from './problem';

const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: false });

function fieldOf(e: ErrorObject): string {
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') return [base, e.params.missingProperty].filter(Boolean).join('.');
  if (e.keyword === 'additionalProperties') return [base, e.params.additionalProperty].filter(Boolean).join('.');
  return base || 'body';
}

/** A validator for one JSON body shape: returns the typed value or throws 400 naming every bad field. */
export function validator<T>(schema: JSONSchemaType<T>): (body: unknown) => T {
  const check = ajv.compile(schema);
  return (body) => {
    const value = body === undefined || body === null ? {} : structuredClone(body);
    if (check(value)) return value;
    throw invalid((check.errors ?? []).map((e) => ({ field: fieldOf(e), message: e.message ?? 'is invalid' })));
  };
}
