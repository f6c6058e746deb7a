import { Router } from '@koa/router';
import type { Context } from 'koa';
import { getProduct } from '../../store/products';
import { patchRoom, roomStats, type RoomPatch } from '../../store/room';
import { buyerOf, requireBearer } from '../auth';
import { checkForBots, joinSpender } from '../bot-check';
import type { ApiDeps } from '../deps';
import { Problem } from '../problem';
import type { TicketView } from '../waiting-room';
import { validator } from '../validate';

const roomPatch = validator<RoomPatch>({
  type: 'object',
  additionalProperties: false,
  properties: {
    // Null, as left out: unchanged (Ajv wants null among the values of a nullable enum).
    state: { type: 'string', enum: ['open', 'paused', 'closed', null], nullable: true },
    admitPerSecond: { type: 'number', exclusiveMinimum: 0, maximum: 100_000, nullable: true },
    maxActive: { type: 'integer', minimum: 1, maximum: 10_000_000, nullable: true },
  },
});

const noRoom = async (deps: ApiDeps, sku: string) =>
  (await getProduct(deps.db, sku))
    ? new Problem(404, 'product-not-found', `product ${sku} has no waiting room`)
    : new Problem(404, 'product-not-found', `no product with SKU ${sku}`);

async function operatorView(deps: ApiDeps, sku: string) {
  const [stats] = await roomStats(deps.db, sku);
  if (!stats) throw await noRoom(deps, sku);
  return {
    state: stats.state,
    soldOut: stats.soldOut,
    waiting: stats.waiting,
    admitted: stats.admitted,
    active: stats.active,
    admitPerSecond: stats.admitPerSecond,
    maxActive: stats.maxActive,
    sessionSeconds: stats.sessionSeconds,
  };
}

/** A buyer in line is told when to ask again: `Retry-After` is the view's `nextPollSeconds` (api/next-poll.ts). */
function askAgainAfter(ctx: Context, view: TicketView): void {
  if (view.nextPollSeconds !== undefined) ctx.set('Retry-After', String(view.nextPollSeconds));
}

/**
 * Waiting-room routes: a buyer joins (one ticket per buyer and SKU) and polls the ticket; polls are
 * answered from the signed ticket and this process's cached serving counter (api/waiting-room.ts),
 * each saying when to ask again. The operator reads and changes a room live.
 */
export function queueRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const admin = requireBearer(deps.adminToken, 'admin');

  router.post('/v1/products/:sku/queue', async (ctx) => {
    const buyerId = await buyerOf(ctx, deps.buyers);
    const { sku } = ctx.params;
    await checkForBots(deps, 'join', {
      sku,
      payload: ctx.get('altcha') || undefined,
      spentBy: joinSpender(sku, buyerId),
    });
    const joined = await deps.room.join(sku, buyerId);
    if (!joined) throw await noRoom(deps, ctx.params.sku);
    ctx.status = joined.created ? 201 : 200;
    askAgainAfter(ctx, joined.view);
    ctx.body = joined.view;
  });

  router.get('/v1/queue/:ticket', async (ctx) => {
    const view = await deps.room.view(ctx.params.ticket);
    if (!view) throw new Problem(404, 'ticket-not-found', 'no such ticket (it is not one this service signed)');
    ctx.set('Cache-Control', 'no-store');
    askAgainAfter(ctx, view);
    ctx.body = view;
  });

  router.get('/v1/products/:sku/waiting-room', admin, async (ctx) => {
    ctx.body = await operatorView(deps, ctx.params.sku);
  });

  router.patch('/v1/products/:sku/waiting-room', admin, async (ctx) => {
    const patch = roomPatch(ctx.request.body);
    if (!(await patchRoom(deps.db, ctx.params.sku, patch))) throw await noRoom(deps, ctx.params.sku);
    await deps.room.changed(ctx.params.sku);
    ctx.body = await operatorView(deps, ctx.params.sku);
  });

  return router;
}
