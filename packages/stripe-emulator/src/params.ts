import { parse } from 'qs';

import { invalidParam, missingParam, unknownParam } from './errors';
import type { Metadata } from './common-types';

export type Params = Record<string, unknown>;

/** Parses Stripe's form encoding (`line_items[0][price_data][currency]=usd`) the way Stripe reads it. */
export function parseStripeParams(encoded: string): Params {
  // arrayLimit above Stripe's own limits (100 line items) so qs keeps indexed keys as arrays.
  return parse(encoded, { depth: 12, arrayLimit: 1000, parameterLimit: 10_000, allowPrototypes: false });
}

function isRecord(value: unknown): value is Params {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads one level of request parameters with Stripe's validation messages; nested readers carry the
 * bracketed parameter name (`line_items[0][quantity]`) so errors name the `param` the way Stripe does.
 */
export class ParamReader {
  constructor(
    private readonly params: Params,
    private readonly prefix = '',
  ) {}

  name(key: string): string {
    return this.prefix ? `${this.prefix}[${key}]` : key;
  }

  has(key: string): boolean {
    return this.params[key] !== undefined;
  }

  /** Stripe refuses parameters it does not know. */
  allowOnly(keys: readonly string[]): this {
    for (const key of Object.keys(this.params)) {
      if (!keys.includes(key)) throw unknownParam(this.name(key));
    }
    return this;
  }

  string(key: string, options: { required: true; maxLength?: number }): string;
  string(key: string, options?: { required?: false; maxLength?: number }): string | null;
  string(key: string, options: { required?: boolean; maxLength?: number } = {}): string | null {
    const value = this.params[key];
    if (value === undefined || value === '') {
      if (options.required) throw missingParam(this.name(key));
      return null;
    }
    if (typeof value !== 'string') throw invalidParam(this.name(key), `Invalid string: ${JSON.stringify(value)}`);
    if (options.maxLength !== undefined && value.length > options.maxLength) {
      throw invalidParam(
        this.name(key),
        `Invalid string: ${value.slice(0, 20)}...; must be at most ${options.maxLength} characters`,
      );
    }
    return value;
  }

  integer(key: string, options: { required: true; min?: number }): number;
  integer(key: string, options?: { required?: false; min?: number }): number | null;
  integer(key: string, options: { required?: boolean; min?: number } = {}): number | null {
    const value = this.params[key];
    if (value === undefined || value === '') {
      if (options.required) throw missingParam(this.name(key));
      return null;
    }
    if (typeof value !== 'string' || !/^-?\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
      throw invalidParam(
        this.name(key),
        `Invalid integer: ${typeof value === 'string' ? value : JSON.stringify(value)}`,
      );
    }
    const number = Number(value);
    if (options.min !== undefined && number < options.min) {
      throw invalidParam(
        this.name(key),
        options.min === 1
          ? `Invalid positive integer: ${number}`
          : `This value must be greater than or equal to ${options.min}.`,
      );
    }
    return number;
  }

  oneOf<T extends string>(key: string, values: readonly T[], options: { required?: boolean } = {}): T | null {
    const value = options.required ? this.string(key, { required: true }) : this.string(key);
    if (value === null) return null;
    if (!(values as readonly string[]).includes(value)) {
      const list =
        values.length > 1 ? `${values.slice(0, -1).join(', ')}, or ${values[values.length - 1]}` : values.join('');
      throw invalidParam(this.name(key), `Invalid ${key}: must be one of ${list}`);
    }
    return value as T;
  }

  object(key: string): ParamReader | null {
    const value = this.params[key];
    if (value === undefined || value === '') return null;
    if (!isRecord(value)) throw invalidParam(this.name(key), `Invalid object`);
    return new ParamReader(value, this.name(key));
  }

  /** Accepts qs arrays and, beyond qs's array limit, objects keyed by index. */
  array(key: string): ParamReader[] | null {
    const value = this.params[key];
    if (value === undefined || value === '') return null;
    let items: unknown[];
    if (Array.isArray(value)) items = value;
    else if (isRecord(value) && Object.keys(value).every((k) => /^\d+$/.test(k))) {
      items = Object.keys(value)
        .sort((a, b) => Number(a) - Number(b))
        .map((k) => value[k]);
    } else throw invalidParam(this.name(key), 'Invalid array');
    return items.map((item, index) => {
      if (!isRecord(item)) throw invalidParam(`${this.name(key)}[${index}]`, 'Invalid object');
      return new ParamReader(item, `${this.name(key)}[${index}]`);
    });
  }

  strings(key: string): string[] {
    const value = this.params[key];
    if (value === undefined || value === '') return [];
    const list = Array.isArray(value) ? value : isRecord(value) ? Object.values(value) : [value];
    return list.map((item, index) => {
      if (typeof item !== 'string') throw invalidParam(`${this.name(key)}[${index}]`, 'Invalid string');
      return item;
    });
  }

  /** Stripe's metadata rules: up to 50 keys, keys up to 40 characters, values up to 500; empty values unset. */
  metadata(key = 'metadata'): Metadata {
    const value = this.params[key];
    if (value === undefined || value === '') return {};
    if (!isRecord(value)) throw invalidParam(this.name(key), 'Invalid hash');
    const out: Metadata = {};
    for (const [k, v] of Object.entries(value)) {
      if (typeof v !== 'string') throw invalidParam(`${this.name(key)}[${k}]`, `Invalid string: ${JSON.stringify(v)}`);
      if (k.length > 40) {
        throw invalidParam(`${this.name(key)}[${k}]`, 'Metadata keys can have up to 40 characters.');
      }
      if (v.length > 500) {
        throw invalidParam(`${this.name(key)}[${k}]`, 'Metadata values can have up to 500 characters.');
      }
      if (v !== '') out[k] = v;
    }
    if (Object.keys(out).length > 50) {
      throw invalidParam(this.name(key), 'Metadata can have up to 50 keys.');
    }
    return out;
  }

  url(key: string): string | null {
    const value = this.string(key, { maxLength: 5000 });
    if (value === null) return null;
    try {
      const parsed = new URL(value);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw invalidParam(this.name(key), 'Not a valid URL', 'url_invalid');
    }
    return value;
  }
}
