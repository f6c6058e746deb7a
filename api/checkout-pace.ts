// The pace Checkout Sessions open at when the deps do not say (ApiDeps.checkoutsPerSecond): the
// purchase routes' slots (api/purchase-flow.ts) and a room's admissions before it measures its own
// (api/waiting-room.ts).

/** A sandbox key's default Stripe budget (config/index.ts), for deps that do not say. */
export const DEFAULT_CHECKOUTS_PER_SECOND = 20;
