import type { RoomSnapshot } from '../store/room-cache';
import {
  availabilityOf,
  getAvailability,
  getProduct,
  listProducts,
  type Availability,
  type Product,
} from '../store/products';
import type { Db } from '../store/db';
import { Problem } from './problem';
import type { WaitingRoom } from './waiting-room';

// The public view of the catalogue: one product (GET /v1/products/:sku, the product page), and the
// newest products for the home page, read as a whole and kept for a while by each process.

/** At most this many products on the home page. */
export const CATALOGUE_PAGE_LIMIT = 100;

/**
 * What the views read: the products and their stock, and the state of each one's waiting room.
 * ApiDeps (api/deps.ts) holds both; it is not imported here, as it names CatalogueCache.
 */
export interface CatalogueDeps {
  db: Db;
  room: WaitingRoom;
}

/** GET /v1/products/:sku body: the public view of stock. Expired holds count as available. */
export async function productView(deps: CatalogueDeps, sku: string): Promise<ProductView> {
  const product = await getProduct(deps.db, sku);
  const a = await getAvailability(deps.db, sku);
  if (!product || !a) throw new Problem(404, 'product-not-found', `no product with SKU ${sku}`);
  return viewOf(product, a, product.waitingRoom ? await deps.room.stateOf(sku) : null);
}

/** The views of the newest `limit` products, newest first: two statements however many there are. */
export async function catalogueView(deps: CatalogueDeps, limit: number): Promise<ProductView[]> {
  const products = await listProducts(deps.db, limit);
  const availability = await availabilityOf(
    deps.db,
    products.map((p) => p.sku),
  );
  const views: ProductView[] = [];
  for (const p of products) {
    const a = availability.get(p.sku);
    if (a) views.push(viewOf(p, a, p.waitingRoom ? await deps.room.stateOf(p.sku) : null));
  }
  return views;
}

export type ProductView = ReturnType<typeof viewOf>;

function viewOf(product: Product, a: Availability, room: RoomSnapshot['room'] | null) {
  return {
    sku: product.sku,
    name: product.name,
    priceCents: product.priceCents,
    currency: product.currency,
    total: a.total,
    available: a.available,
    held: a.held,
    sold: a.sold,
    oversold: a.oversold,
    soldOut: a.soldOut,
    holdSeconds: product.holdSeconds,
    holdGraceSeconds: product.holdGraceSeconds,
    maxPerBuyer: product.maxPerBuyer,
    // The limit per payment method, under its name and its old one (clients of 1.1 read maxPerCard).
    ...(product.maxPerCard ? { maxPerPaymentMethod: product.maxPerCard, maxPerCard: product.maxPerCard } : {}),
    ...(product.maxPerAddress ? { maxPerAddress: product.maxPerAddress } : {}),
    // The terms of rules added through the rules module (store/rules/), under their own names.
    ...product.ruleTerms,
    ...(product.shippingCountries ? { shippingCountries: product.shippingCountries } : {}),
    botCheck: product.botCheck,
    buckets: product.buckets,
    oversellAllowance: product.oversellAllowance,
    ...(product.opensAt ? { opensAt: product.opensAt.toISOString() } : {}),
    // Left out without a room (the contract's `waitingRoom?`); its state is the room's own, live.
    ...(room
      ? {
          waitingRoom: {
            state: room.state,
            soldOut: room.soldOut,
            admitPerSecond: room.admitPerSecond,
            maxActive: room.maxActive,
            sessionSeconds: room.sessionSeconds,
          },
        }
      : {}),
    hasUnits: product.hasUnits,
  };
}

/**
 * The home page's catalogue as this process last read it: read at most once per `ttlMs` (one read
 * for every page that asks meanwhile), so a crowd on the home page costs the database a few
 * statements a period, not two per product per page. A product created or restocked through this
 * process shows at once (`changed`); one through another process within `ttlMs`.
 */
export class CatalogueCache {
  private kept?: { views: ProductView[]; readAt: number };
  private reading: Promise<ProductView[]> | null = null;
  private generation = 0;

  constructor(private readonly ttlMs: number) {}

  /** The newest CATALOGUE_PAGE_LIMIT products, at most `ttlMs` old. */
  newest(deps: CatalogueDeps): Promise<ProductView[]> {
    if (this.kept && Date.now() - this.kept.readAt < this.ttlMs) return Promise.resolve(this.kept.views);
    if (this.reading) return this.reading;
    const generation = this.generation;
    const readAt = Date.now();
    const reading = catalogueView(deps, CATALOGUE_PAGE_LIMIT)
      .then((views) => {
        if (generation === this.generation) this.kept = { views, readAt };
        return views;
      })
      .finally(() => {
        if (this.reading === reading) this.reading = null;
      });
    this.reading = reading;
    return reading;
  }

  /** The catalogue changed (a product created or restocked here): the next page reads it again. */
  changed(): void {
    this.generation++;
    this.kept = undefined;
    this.reading = null;
  }
}
