// Waiting in the fast tier: on a condition, polled, never on a fixed sleep. A wait gives up after
// 40 s by default: a condition met returns at once, and in one run every file stalled for 12 s at the
// same moment (no process printed anything), which a 15 s bound turned into three failures.

/** How long the fast tier's waits last before they fail. */
export const UNTIL_MS = 40_000;

/** Polls `check` until it returns something truthy (returned), or fails after `ms` naming `what`. */
export async function until<T>(check: () => T | null | undefined | false, what: string, ms = UNTIL_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits `ms` (for a fake activity that takes its time, never for a test's own condition). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** What `idle` needs of a workflow handle: its description (the client's WorkflowHandle has it). */
interface Describable {
  describe(): Promise<{ raw: { pendingActivities?: unknown[] | null; pendingWorkflowTask?: unknown } }>;
}

/**
 * Waits until the workflow waits on its own: no activity and no workflow task pending. The only way
 * a test knows a saga has gone back to waiting for support (and will count the word support sends
 * next), since the record shows `needs_attention` before the saga's last step for it has run.
 */
export async function idle(h: Describable, what: string, ms = 40_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const { raw } = await h.describe();
    if ((raw.pendingActivities?.length ?? 0) === 0 && !raw.pendingWorkflowTask) return;
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for the workflow to wait: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A fake activity held until the test opens the gate (a call in flight for as long as the test needs).
 * Opened at the test's end in any case, so that no call is left waiting for the next test's worker.
 */
export function gate(t: { teardown(fn: () => void): void }): { open(): void; passed(): Promise<true> } {
  let opened = false;
  t.teardown(() => {
    opened = true;
  });
  return {
    open: () => {
      opened = true;
    },
    passed: () => until(() => opened, 'the test to open the gate', 60_000),
  };
}
