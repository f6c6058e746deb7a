// The API's shutdown, in numbers a deployment's stop timeout must cover (docker-compose.yml's
// `stop_grace_period`, Kubernetes' `terminationGracePeriodSeconds`): on SIGTERM /readyz answers 503
// for SHUTDOWN_GRACE_MS, then the listener closes and the requests in flight get DRAIN_MS.

/** How long in-flight requests get to finish after the listener closes. */
export const DRAIN_MS = 5000;
