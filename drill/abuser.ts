// --abuser: one client hammering the sale from one address (drill/addresses.ts) while the crowd buys,
// through the balancer when there is one: purchase requests without an Idempotency-Key (past the
// limit the API refuses them as invalid, so the abuser never holds a unit) and reads of the
// product's page, each kind under its own per-address limit. It goes on from the opening until it
// has been refused often enough and a while has passed, or the sale is over. The check
// (drill/invariants.ts): it was limited, and not one of the crowd's requests was.
import { ABUSER_ADDRESS } from './addresses';
import { DrillHttp, sleep } from './http';

/** Connections the abuser holds, half for each kind of request. */
const SOCKETS = 32;
/** At most this many requests a second: far past the limits, without taking the machine from the crowd. */
const MAX_PER_SECOND = 500;
/** It stops once each kind of request was refused this often, and not before MIN_MS has passed. */
const LIMITED_ENOUGH = 10;
const MIN_MS = 2000;

export interface AbuseFigures {
  address: string;
  requests: number;
  /** Answered 429 by a per-address limit. */
  limited: number;
  /** Answered by the API past the limits (400 for a purchase without a key, 200 for the page). */
  served: number;
  /** 5xx or no answer (an API killed by a fault). */
  failed: number;
  /** Each answer (`POST /v1/purchases 429 rate-limited`) and how many. */
  answers: Record<string, number>;
  seconds: number;
}

export class Abuser {
  private readonly http: DrillHttp;
  private readonly figures: AbuseFigures = {
    address: ABUSER_ADDRESS,
    requests: 0,
    limited: 0,
    served: 0,
    failed: 0,
    answers: {},
    seconds: 0,
  };
  private run: Promise<void> = Promise.resolve();
  /** Refusals of the purchases, and of the page reads. */
  private readonly refused = { purchases: 0, pages: 0 };

  constructor(
    apiUrls: string[],
    private readonly sku: string,
    private readonly authorization: string,
  ) {
    this.http = new DrillHttp(apiUrls, SOCKETS, (answer) => this.count(answer), {
      localAddress: () => ABUSER_ADDRESS,
    });
  }

  private count(answer: string): void {
    const f = this.figures;
    f.requests++;
    f.answers[answer] = (f.answers[answer] ?? 0) + 1;
    const status = Number(/ (\d{3})\b/.exec(answer)?.[1] ?? 0);
    if (status === 429) {
      f.limited++;
      this.refused[answer.startsWith('POST') ? 'purchases' : 'pages']++;
    } else if (status >= 200 && status < 500) f.served++;
    else f.failed++;
  }

  /** From `from` until each kind was refused LIMITED_ENOUGH times (MIN_MS at least), or `deadline` (Date.now's). */
  start(from: number, deadline: number, signal: AbortSignal): void {
    let next = from;
    const done = () =>
      signal.aborted ||
      Date.now() > deadline ||
      (Math.min(this.refused.purchases, this.refused.pages) >= LIMITED_ENOUGH && Date.now() - from >= MIN_MS);
    const one = async (n: number) => {
      while (!done()) {
        // One shared pace for every connection.
        const at = next;
        next = Math.max(next, Date.now()) + 1000 / MAX_PER_SECOND;
        await sleep(at - Date.now());
        try {
          if (n % 2) await this.http.call('GET', `/p/${encodeURIComponent(this.sku)}`, '/p/:sku');
          else
            await this.http.call('POST', '/v1/purchases', '/v1/purchases', {
              headers: { authorization: this.authorization },
              body: { sku: this.sku },
            });
        } catch {
          // counted as failed; the next request may reach another API
        }
      }
    };
    this.run = Promise.all(Array.from({ length: SOCKETS }, (_, n) => one(n))).then(() => {
      this.figures.seconds = Math.round((Date.now() - from) / 100) / 10;
    });
  }

  async finish(): Promise<AbuseFigures> {
    await this.run;
    this.http.close();
    return this.figures;
  }
}
