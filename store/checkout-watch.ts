import type { Db } from './db';
import type { NotifyListener } from './notify-listener';
import { getPurchase, type PurchaseRecord } from './purchases';

// The API's wait for a purchase's Checkout Session: the saga answers once its hold is taken
// (holdAnsweredUpdate), and the session step, on the Stripe queue, writes the checkout URL to the
// purchase record; a trigger (migration 016) notifies `purchase_answered` when a purchase leaves
// `holding`, and the waiters of this process wake. The buyer's 201 does not wait for the saga's next
// workflow task.

const CHANNEL = 'purchase_answered';
/** A waiter reads its record again this often even without a notification (one lost is not a hang). */
const RECHECK_MS = 1_000;

export class CheckoutWatch {
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly db: Db,
    /** The process's LISTEN connection; without one the waiters read their records every RECHECK_MS. */
    listener?: NotifyListener,
  ) {
    listener?.on(
      CHANNEL,
      (purchaseId) => this.wake(purchaseId),
      () => {
        for (const id of this.waiters.keys()) this.wake(id);
      },
    );
  }

  /**
   * The purchase's record once it is no longer `holding` (its session open, or it failed), or null
   * after `ms`, or at once when `stop` aborts.
   */
  async untilAnswered(purchaseId: string, ms: number, stop?: AbortSignal): Promise<PurchaseRecord | null> {
    const deadline = Date.now() + ms;
    for (;;) {
      let wake = (): void => {};
      // Listening before reading: a notification between the read and the wait still wakes it.
      const woken = new Promise<void>((resolve) => (wake = resolve));
      this.add(purchaseId, wake);
      stop?.addEventListener('abort', wake, { once: true });
      let timer: NodeJS.Timeout | undefined;
      try {
        const record = await getPurchase(this.db, purchaseId);
        if (record && record.status !== 'holding') return record;
        const left = deadline - Date.now();
        if (left <= 0 || stop?.aborted) return null;
        await Promise.race([woken, new Promise<void>((r) => (timer = setTimeout(r, Math.min(left, RECHECK_MS))))]);
      } finally {
        clearTimeout(timer);
        stop?.removeEventListener('abort', wake);
        this.remove(purchaseId, wake);
      }
    }
  }

  private wake(purchaseId: string): void {
    for (const w of this.waiters.get(purchaseId) ?? []) w();
  }

  private add(purchaseId: string, w: () => void): void {
    let set = this.waiters.get(purchaseId);
    if (!set) this.waiters.set(purchaseId, (set = new Set()));
    set.add(w);
  }

  private remove(purchaseId: string, w: () => void): void {
    const set = this.waiters.get(purchaseId);
    set?.delete(w);
    if (set?.size === 0) this.waiters.delete(purchaseId);
  }
}
