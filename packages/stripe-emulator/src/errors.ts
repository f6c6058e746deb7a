/**
 * Error vocabulary of the emulator. The Stripe API routes answer with Stripe's own error body
 * (`{ error: { type, code?, message, param? } }`) so stripe-node raises the same error classes it
 * raises against api.stripe.com; the `_emulator` control routes answer with RFC 9457 problem details.
 */

export type StripeErrorType = 'api_error' | 'card_error' | 'idempotency_error' | 'invalid_request_error';

export interface StripeErrorBody {
  error: {
    type: StripeErrorType;
    message: string;
    code?: string;
    param?: string;
    doc_url?: string;
  };
}

export class StripeApiError extends Error {
  /**
   * @param replayable whether an idempotent request that failed this way stores the failure for
   *   replay. Stripe saves a result only once the endpoint began executing: parameter validation
   *   failures, key conflicts and server faults are not saved, business-rule refusals are.
   */
  constructor(
    readonly status: number,
    readonly type: StripeErrorType,
    message: string,
    readonly details: { code?: string; param?: string } = {},
    readonly replayable = true,
  ) {
    super(message);
    this.name = 'StripeApiError';
  }

  /** Headers the answer carries besides the body (a rate limit's `Stripe-Rate-Limited-Reason`). */
  headers: Record<string, string> = {};

  toBody(): StripeErrorBody {
    const { code, param } = this.details;
    return {
      error: {
        type: this.type,
        message: this.message,
        ...(code ? { code, doc_url: `https://stripe.com/docs/error-codes/${code.replace(/_/g, '-')}` } : {}),
        ...(param ? { param } : {}),
      },
    };
  }
}

/** A request parameter Stripe would refuse before running the endpoint (never stored for replay). */
export function invalidParam(param: string, message: string, code = 'parameter_invalid'): StripeApiError {
  return new StripeApiError(400, 'invalid_request_error', message, { code, param }, false);
}

export function missingParam(param: string): StripeApiError {
  return new StripeApiError(
    400,
    'invalid_request_error',
    `Missing required param: ${param}.`,
    { code: 'parameter_missing', param },
    false,
  );
}

export function unknownParam(param: string): StripeApiError {
  return new StripeApiError(
    400,
    'invalid_request_error',
    `Received unknown parameter: ${param}`,
    { code: 'parameter_unknown', param },
    false,
  );
}

export function resourceMissing(objectName: string, id: string, param = 'id'): StripeApiError {
  return new StripeApiError(404, 'invalid_request_error', `No such ${objectName}: '${id}'`, {
    code: 'resource_missing',
    param,
  });
}

/** A refusal by the endpoint itself (wrong state, nothing left to refund): stored for replay like Stripe does. */
export function invalidRequest(message: string, details: { code?: string; param?: string } = {}): StripeApiError {
  return new StripeApiError(400, 'invalid_request_error', message, details);
}

export function unrecognizedUrl(method: string, path: string): StripeApiError {
  return new StripeApiError(
    404,
    'invalid_request_error',
    `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
    {},
    false,
  );
}

export function unsupportedContentType(type: string): StripeApiError {
  return new StripeApiError(
    400,
    'invalid_request_error',
    `Invalid request: unsupported Content-Type ${type}. Stripe's API expects application/x-www-form-urlencoded request bodies.`,
    {},
    false,
  );
}

export function missingApiKey(): StripeApiError {
  return new StripeApiError(
    401,
    'invalid_request_error',
    "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
    {},
    false,
  );
}

export function invalidApiKey(key: string): StripeApiError {
  const masked = key.length > 4 ? `${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}` : key;
  return new StripeApiError(
    401,
    'invalid_request_error',
    `Invalid API Key provided: ${masked}`,
    { code: 'api_key_invalid' },
    false,
  );
}

export function idempotencyMismatch(key: string): StripeApiError {
  return new StripeApiError(
    400,
    'idempotency_error',
    `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
    {},
    false,
  );
}

export function idempotencyEndpointMismatch(key: string, first: string, now: string): StripeApiError {
  return new StripeApiError(
    400,
    'idempotency_error',
    `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${first}' vs '${now}'). Try using a key other than '${key}' if you meant to execute a different request.`,
    {},
    false,
  );
}

export function idempotencyInProgress(key: string): StripeApiError {
  return new StripeApiError(
    409,
    'idempotency_error',
    `There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): ${key}. Please try again later.`,
    { code: 'idempotency_key_in_use' },
    false,
  );
}

/** The body an injected fault answers with, shaped like the error Stripe returns for that status. */
export function faultError(status: number): StripeApiError {
  if (status === 429) {
    return new StripeApiError(
      429,
      'invalid_request_error',
      'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.',
      { code: 'rate_limit' },
      false,
    );
  }
  if (status === 409) {
    return new StripeApiError(
      409,
      'invalid_request_error',
      'This object cannot be accessed right now because another API request or Stripe process is currently accessing it. If you see this error intermittently, retry the request. If you see this error frequently and are making multiple concurrent requests to a single object, make your requests serially or at a lower rate.',
      { code: 'lock_timeout' },
      false,
    );
  }
  if (status < 500) {
    return new StripeApiError(status, 'invalid_request_error', `Injected fault: HTTP ${status}.`, {}, false);
  }
  return new StripeApiError(
    status,
    'api_error',
    'An unknown error occurred while processing your request. Please try again, or contact us at https://support.stripe.com/ if the problem persists.',
    {},
    false,
  );
}

/**
 * A 5xx the endpoint answered after it began: Stripe keeps it under the Idempotency-Key and replays it,
 * and tells clients not to retry it (`Stripe-Should-Retry: false`): the same key gets the same answer.
 */
export function endpointFault(status: number): StripeApiError {
  const fault = faultError(status);
  const kept = new StripeApiError(fault.status, fault.type, fault.message, fault.details, true);
  kept.headers = { 'Stripe-Should-Retry': 'false' };
  return kept;
}

export function internalError(): StripeApiError {
  return faultError(500);
}

/** An RFC 9457 problem raised by the `_emulator` control routes and the hosted page. */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'Problem';
  }

  toBody(): { type: string; title: string; status: number; detail: string; code: string } {
    return {
      type: 'about:blank',
      title: titleFor(this.status),
      status: this.status,
      detail: this.detail,
      code: this.code,
    };
  }
}

function titleFor(status: number): string {
  switch (status) {
    case 400:
      return 'Bad Request';
    case 404:
      return 'Not Found';
    case 409:
      return 'Conflict';
    case 413:
      return 'Content Too Large';
    default:
      return status >= 500 ? 'Internal Server Error' : 'Error';
  }
}
