// Temporal Cloud actions, counted from the histories of the drop's workflows (every execution whose
// `Sku` search attribute is the drill's), by the rules of Temporal's "Temporal Cloud Actions" page:
// a start (a signal-with-start that started the workflow counts once), each signal, each accepted
// update, each activity scheduled and each retry of it (ActivityTaskStarted.attempt − 1), the local
// activities of one workflow task as one (their `core_local_activity` markers) plus each local retry
// (`meteringMetadata.nonfirstLocalActivityExecutionAttempts`), each timer started, each search
// attribute upsert, each child workflow (two), each options update. Not in a history and so not
// counted: queries (the service sends none), workflow task heartbeats, activity heartbeats.
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { purchaseWorkflowId } from '../vocabulary';

export const ACTION_TYPES = [
  'start',
  'signal',
  'update',
  'activity',
  'activity retry',
  'local activities',
  'local activity retry',
  'timer',
  'search attribute upsert',
  'child workflow',
  'options update',
] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

export interface ActionCount {
  /** Workflow executions (a saga's follow-up run is one more). */
  workflows: number;
  /** Distinct purchase workflows: the sagas, whether or not their buyer got a checkout. */
  sagas: number;
  total: number;
  byType: Record<ActionType, number>;
  /** Actions per second of the drop (by the events' times, seconds since the opening). */
  perSecond: Array<{ second: number; actions: number }>;
  peakPerSecond: number;
  /** Under Worker Versioning: each purchase saga's build ids (the workers that completed its workflow tasks). */
  sagaBuilds: Record<string, string[]>;
  /** Workflow tasks that timed out (a worker gone with them), and when their workflow went on. */
  taskTimeouts: Array<{ workflowId: string; timedOutAt: number; resumedAt: number | null }>;
}

interface JsonEvent {
  eventId: string;
  eventType: string;
  eventTime: string;
  [attributes: string]: unknown;
}

const HISTORY_FETCHES_AT_ONCE = 8;

const attrs = (e: JsonEvent): Record<string, unknown> =>
  (Object.entries(e).find(([k]) => k.endsWith('Attributes'))?.[1] as Record<string, unknown>) ?? {};

/** One history's actions, added to `into`; `t0` turns event times into ms since the opening. */
export function countHistory(workflowId: string, events: JsonEvent[], t0: number, into: ActionCount, runId = ''): void {
  const seconds = new Map<number, number>();
  const add = (type: ActionType, e: JsonEvent, n = 1) => {
    if (n <= 0) return;
    into.byType[type] += n;
    into.total += n;
    const s = Math.floor((Date.parse(e.eventTime) - t0) / 1000);
    seconds.set(s, (seconds.get(s) ?? 0) + n);
  };
  const markerTasks = new Set<string>();
  const builds = new Set<string>();
  let pendingTimeout: number | undefined;
  events.forEach((e, i) => {
    const a = attrs(e);
    switch (e.eventType) {
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED':
        add('start', e);
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED':
        // Right after the start: a signal-with-start, one action for both.
        if (!(i === 1 && events[0].eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED')) add('signal', e);
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED':
        add('update', e);
        break;
      case 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED':
        add('activity', e);
        break;
      case 'EVENT_TYPE_ACTIVITY_TASK_STARTED':
        add('activity retry', e, Number(a.attempt ?? 1) - 1);
        break;
      case 'EVENT_TYPE_MARKER_RECORDED':
        if (a.markerName === 'core_local_activity') {
          const task = String(a.workflowTaskCompletedEventId);
          if (!markerTasks.has(task)) add('local activities', e);
          markerTasks.add(task);
        }
        break;
      case 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED': {
        const build = (a.deploymentVersion as { buildId?: string } | undefined)?.buildId;
        if (build) builds.add(build);
        const metering = a.meteringMetadata as { nonfirstLocalActivityExecutionAttempts?: number } | undefined;
        add('local activity retry', e, Number(metering?.nonfirstLocalActivityExecutionAttempts ?? 0));
        if (pendingTimeout !== undefined) {
          into.taskTimeouts.push({ workflowId, timedOutAt: pendingTimeout, resumedAt: Date.parse(e.eventTime) - t0 });
          pendingTimeout = undefined;
        }
        break;
      }
      case 'EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT':
        pendingTimeout ??= Date.parse(e.eventTime) - t0;
        break;
      case 'EVENT_TYPE_TIMER_STARTED':
        add('timer', e);
        break;
      case 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES': {
        const fields = Object.keys((a.searchAttributes as { indexedFields?: object } | undefined)?.indexedFields ?? {});
        // The versioning attribute alone is exempt.
        if (fields.some((f) => f !== 'TemporalChangeVersion')) add('search attribute upsert', e);
        break;
      }
      case 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED':
        add('child workflow', e, 2);
        break;
      case 'EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED':
        add('options update', e);
        break;
    }
  });
  if (pendingTimeout !== undefined) into.taskTimeouts.push({ workflowId, timedOutAt: pendingTimeout, resumedAt: null });
  into.workflows++;
  // Per run: a follow-up run after a deploy starts on the new version, as it should.
  const run = runId ? `${workflowId} (run ${runId})` : workflowId;
  if (builds.size && workflowId.startsWith(purchaseWorkflowId(''))) into.sagaBuilds[run] = [...builds];
  for (const [second, n] of seconds) into.perSecond.push({ second, actions: n });
}

export function emptyCount(): ActionCount {
  return {
    workflows: 0,
    sagas: 0,
    total: 0,
    byType: Object.fromEntries(ACTION_TYPES.map((t) => [t, 0])) as Record<ActionType, number>,
    perSecond: [],
    peakPerSecond: 0,
    sagaBuilds: {},
    taskTimeouts: [],
  };
}

/** Reads the history of every workflow of the SKU (eight at a time) and counts their actions. */
export async function countActions(client: Client, sku: string, t0: number): Promise<ActionCount> {
  const executions: Array<{ workflowId: string; runId: string }> = [];
  for await (const w of client.workflow.list({ query: `Sku="${sku}"` }))
    executions.push({ workflowId: w.workflowId, runId: w.runId });
  const count = emptyCount();
  let next = 0;
  const fetchOne = async (): Promise<void> => {
    while (next < executions.length) {
      const { workflowId, runId } = executions[next++];
      const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
      const events = (JSON.parse(historyToJSON(history)) as { events: JsonEvent[] }).events;
      countHistory(workflowId, events, t0, count, runId);
    }
  };
  await Promise.all(Array.from({ length: HISTORY_FETCHES_AT_ONCE }, fetchOne));
  count.sagas = new Set(executions.map((e) => e.workflowId).filter((id) => id.startsWith(purchaseWorkflowId('')))).size;
  const bySecond = new Map<number, number>();
  for (const { second, actions } of count.perSecond) bySecond.set(second, (bySecond.get(second) ?? 0) + actions);
  count.perSecond = [...bySecond].sort(([a], [b]) => a - b).map(([second, actions]) => ({ second, actions }));
  count.peakPerSecond = Math.max(0, ...bySecond.values());
  return count;
}

/** Under Worker Versioning: sagas per build id, and the sagas whose workflow tasks ran on more than one. */
export function versionFigures(count: ActionCount): { byBuild: Record<string, number>; moved: string[] } | undefined {
  const sagas = Object.entries(count.sagaBuilds);
  if (!sagas.length) return undefined;
  const byBuild: Record<string, number> = {};
  for (const [, builds] of sagas) if (builds.length === 1) byBuild[builds[0]] = (byBuild[builds[0]] ?? 0) + 1;
  return {
    byBuild,
    moved: sagas.filter(([, builds]) => builds.length > 1).map(([id, b]) => `${id} (${b.join(', ')})`),
  };
}
