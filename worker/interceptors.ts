import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { REQUEST_ID_HEADER } from '../workflows/interceptors';

/**
 * The request id a workflow put on the activity's header (workflows/interceptors.ts), on every line
 * the activity logs through `Context.current().log` and on the SDK's own lines about it, without the
 * task token (a 200-character opaque string on every line: workflowId, activityId and attempt name
 * the task); and one `activity done` line per attempt that succeeded, with its duration. A failed
 * attempt has the SDK's own line, `Activity failed` (warn, with the error, the attempt and the
 * duration): one line per failure.
 */
export const activityInterceptors: ActivityInterceptorsFactory = (ctx) => {
  let requestId: string | undefined;
  return {
    inbound: {
      async execute(input, next) {
        const header = input.headers[REQUEST_ID_HEADER];
        if (header) requestId = defaultPayloadConverter.fromPayload<string>(header);
        const started = process.hrtime.bigint();
        const result = await next(input);
        ctx.log.info('activity done', { durationMs: Number((process.hrtime.bigint() - started) / 1_000_000n) });
        return result;
      },
    },
    outbound: {
      getLogAttributes: (input, next) => {
        const attributes: Record<string, unknown> = { ...input, ...(requestId ? { requestId } : {}) };
        delete attributes.taskToken;
        return next(attributes);
      },
    },
  };
};
