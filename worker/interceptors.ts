import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { REQUEST_ID_HEADER } from '../workflows/interceptors';

/**
 * The request id a workflow put on the activity's header (workflows/interceptors.ts), on every line
 * the activity logs through `Context.current().log` and on the SDK's own lines about it; and one
 * `activity done` / `activity failed` line per attempt, with its duration.
 */
export const activityInterceptors: ActivityInterceptorsFactory = (ctx) => {
  let requestId: string | undefined;
  return {
    inbound: {
      async execute(input, next) {
        const header = input.headers[REQUEST_ID_HEADER];
        if (header) requestId = defaultPayloadConverter.fromPayload<string>(header);
        const started = process.hrtime.bigint();
        const durationMs = () => Number((process.hrtime.bigint() - started) / 1_000_000n);
        try {
          const result = await next(input);
          ctx.log.info('activity done', { durationMs: durationMs() });
          return result;
        } catch (err) {
          ctx.log.warn('activity failed', { durationMs: durationMs(), attempt: ctx.info.attempt, error: err as Error });
          throw err;
        }
      },
    },
    outbound: {
      getLogAttributes: (input, next) => next(requestId ? { ...input, requestId } : input),
    },
  };
};
