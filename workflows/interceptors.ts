import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowInterceptors } from '@temporalio/workflow';

// The request id of the HTTP request that started a saga (PurchaseInput.requestId), on every log
// line of that saga: the workflow's own `log` lines, and through a header on each activity it
// schedules, its activities' lines (worker/interceptors.ts reads the header). Neither logs nor
// headers are commands: adding or changing them needs no patch. A run started without a request id
// has none.

/** The header that carries the request id to activities. */
export const REQUEST_ID_HEADER = 'requestId';

/** One factory call per workflow run: `requestId` is this run's alone. */
export const interceptors = (): WorkflowInterceptors => {
  let requestId: string | undefined;
  const withHeader = <T extends { headers: Record<string, unknown> }>(input: T): T =>
    requestId
      ? { ...input, headers: { ...input.headers, [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(requestId) } }
      : input;
  return {
    inbound: [
      {
        execute(input, next) {
          const first = input.args[0] as { requestId?: unknown } | undefined;
          if (typeof first?.requestId === 'string') requestId = first.requestId;
          return next(input);
        },
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => next(withHeader(input)),
        scheduleLocalActivity: (input, next) => next(withHeader(input)),
        getLogAttributes: (input, next) => next(requestId ? { ...input, requestId } : input),
      },
    ],
  };
};
