import { METHODS } from 'node:http';
import type Koa from 'koa';
import { isBadText, TEXT_MESSAGE, type FieldError } from './json-guard';
import { invalid, Problem } from './problem';

// The door every request passes before routing: a method the routers implement, a path whose
// segments decode to clean text, and clean values in the headers that become data. A path
// parameter reaches a query as text; Postgres refuses NUL in it (and a percent-encoding that is not
// UTF-8 would reach the route undecoded), so both are refused here with 400 naming the parameter.

/**
 * The methods this server recognises: every one Node's HTTP parser accepts (TRACE, PROPFIND, QUERY,
 * ...). A route that does not serve one answers 405 with `Allow` (the routers are told they know
 * them all, api/app.ts); 501 is only for a method outside this list (Node refuses most of those
 * before Koa sees them, api/client-errors.ts).
 */
export const KNOWN_METHODS: readonly string[] = METHODS;

/** The longest path parameter taken (a SKU is at most 64 characters, a purchase id 28). */
export const MAX_PARAM_LENGTH = 256;
/** Parameters allowed to be longer: a waiting-room ticket carries its SKU and buyer id, signed. */
const LONG_PARAMS: Record<string, number> = { ticket: 1024 };

/** Longest Idempotency-Key, as documented. */
const MAX_KEY_LENGTH = 255;

type Template = string[];

/** `/v1/products/:sku/restock` → ['v1', 'products', ':sku', 'restock']. */
function templateOf(route: string): Template {
  return route.split('/').slice(1);
}

/** The first route template that fits `segments` (as sent, not decoded), if any. */
function templateFor(templates: Template[], segments: string[]): Template | undefined {
  return templates.find(
    (t) => t.length === segments.length && t.every((part, j) => part.startsWith(':') || part === segments[j]),
  );
}

function checkPath(templates: Template[], rawPath: string): FieldError[] {
  const segments = rawPath.split('/').slice(1);
  // Found once for the path (it was looked for again at every segment: a tenth of a poll's guard).
  const template = templateFor(templates, segments);
  const errors: FieldError[] = [];
  segments.forEach((segment, i) => {
    const param = template?.[i].startsWith(':') ? template[i].slice(1) : undefined;
    const field = param ?? 'path';
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      errors.push({ field, message: 'is not valid percent-encoded UTF-8' });
      return;
    }
    if (isBadText(decoded)) errors.push({ field, message: TEXT_MESSAGE });
    else if (param && decoded.length > (LONG_PARAMS[param] ?? MAX_PARAM_LENGTH)) {
      errors.push({ field, message: `must be at most ${LONG_PARAMS[param] ?? MAX_PARAM_LENGTH} characters` });
    }
  });
  return errors;
}

/**
 * What is wrong with an idempotency key (the JSON route's header, the Buy form's field), named as
 * `field`: missing, control characters, or too long. Postgres could not store a NUL.
 */
export function idempotencyKeyFaults(key: string, field = 'Idempotency-Key'): FieldError[] {
  if (!key) return [{ field, message: 'is required' }];
  // Node refuses most control characters in a header; a tab (or DEL) still gets through, and a form
  // field may hold any. (Bytes 0x80–0x9F are left alone: they are how UTF-8 arrives in a Latin-1
  // header value.)
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(key)) return [{ field, message: 'must not contain control characters' }];
  if (key.length > MAX_KEY_LENGTH) return [{ field, message: `must be at most ${MAX_KEY_LENGTH} characters` }];
  return [];
}

function checkHeaders(ctx: Koa.Context): FieldError[] {
  const key = ctx.get('idempotency-key');
  return key ? idempotencyKeyFaults(key) : [];
}

/**
 * The request guard: 501 `not-implemented` for a method the server does not recognise,
 * 400 `invalid-request` for a path segment that is not percent-encoded UTF-8 or decodes to a
 * control character or a lone surrogate, or a parameter longer than MAX_PARAM_LENGTH (the field is
 * the parameter's name from `routes`, else `path`), and for an Idempotency-Key with control
 * characters. Nothing is read or written before it passes.
 */
export function requestGuard(routes: string[]): Koa.Middleware {
  const templates = [...new Set(routes)].map(templateOf);
  return async (ctx, next) => {
    if (!KNOWN_METHODS.includes(ctx.method)) {
      throw new Problem(501, 'not-implemented', `${ctx.method} is not implemented by this server`);
    }
    const errors = [...checkPath(templates, ctx.path), ...checkHeaders(ctx)];
    if (errors.length > 0) throw invalid(errors);
    await next();
  };
}
