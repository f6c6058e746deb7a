import { setMaxListeners } from 'node:events';

// The API's shutdown, in numbers a deployment's stop timeout must cover (docker-compose.yml's
// `stop_grace_period`, Kubernetes' `terminationGracePeriodSeconds`): on SIGTERM /readyz answers 503
// for SHUTDOWN_GRACE_MS, then the listener closes and the requests in flight get DRAIN_MS.

/**
 * How long in-flight requests get to finish after the listener closes. A request waiting on a saga
 * (POST /v1/purchases waits up to PURCHASE_TIMEOUT_MS, 20 s, a support refund 10 s, a cancel 5 s
 * and more) does not wait that long: the listener's close ends its wait, and it answers what it has
 * (`Lifecycle.closing`).
 */
export const DRAIN_MS = 5000;

/** The API process's shutdown as its requests see it (api/main.ts moves it along). */
export class Lifecycle {
  /** Set on SIGTERM: /readyz answers 503 so load balancers stop sending traffic. */
  draining = false;
  private readonly closer = new AbortController();

  constructor() {
    // Every request waiting on a saga listens to it (a sale's crowd: thousands): no leak warning past 10.
    setMaxListeners(0, this.closer.signal);
  }

  /**
   * Aborted when the listener closes: a request waiting on a saga stops waiting and answers what it
   * has (a purchase that holds its unit 202 with its Location, one that does not 503 to retry with the
   * same key), well inside DRAIN_MS, rather than being cut off with its connection.
   */
  get closing(): AbortSignal {
    return this.closer.signal;
  }

  /** The listener is closing: the waits end. */
  close(): void {
    this.closer.abort();
  }
}
