import fs from 'node:fs';
import path from 'node:path';

import type { IdempotencySnapshot } from './idempotency';
import type { AccountSnapshot } from './state';
import type { DeliverySnapshot } from './webhooks';

const FORMAT = 'stripe-emulator-state';
const VERSION = 1;

/** The state file: the account's objects and events, idempotency records and webhook deliveries. */
export interface PersistedState {
  format: typeof FORMAT;
  version: typeof VERSION;
  saved_at: string;
  account: AccountSnapshot;
  idempotency: IdempotencySnapshot;
  deliveries: DeliverySnapshot[];
}

export type StateParts = Omit<PersistedState, 'format' | 'version' | 'saved_at'>;

/**
 * Reads a state file written by `StateWriter`; null when there is none yet. A file that cannot be
 * read or is not one of ours stops the emulator rather than being overwritten with an empty account.
 */
export function readStateFile(file: string): PersistedState | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`cannot read the emulator state file ${file}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: Partial<PersistedState>;
  try {
    parsed = JSON.parse(text) as Partial<PersistedState>;
  } catch {
    throw new Error(`the emulator state file ${file} is not valid JSON; move it away to start with an empty account`);
  }
  if (parsed?.format !== FORMAT || parsed.version !== VERSION || typeof parsed.account !== 'object') {
    throw new Error(
      `${file} is not a version ${VERSION} payments emulator state file; move it away to start with an empty account`,
    );
  }
  return {
    format: FORMAT,
    version: VERSION,
    saved_at: String(parsed.saved_at),
    account: parsed.account,
    idempotency: parsed.idempotency ?? [],
    deliveries: parsed.deliveries ?? [],
  };
}

/**
 * Writes the state file at most once per `delayMs` after a change (changes in between join the same
 * write), one write at a time, each to a temporary file that is synced and then renamed over the
 * old one, so a reader or a crash sees the previous state or the new one, never half of one.
 */
export class StateWriter {
  private timer: NodeJS.Timeout | null = null;
  private dirty = false;
  private chain: Promise<void> = Promise.resolve();
  private readonly tmp: string;

  constructor(
    private readonly file: string,
    private readonly delayMs: number,
    private readonly collect: () => StateParts,
    private readonly log: (line: string) => void,
  ) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.tmp = `${file}.${process.pid}.tmp`;
  }

  /** Something changed: a write follows within `delayMs`. */
  schedule(): void {
    this.dirty = true;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.chain = this.chain.then(() => this.write());
    }, this.delayMs);
    this.timer.unref();
  }

  /** Writes now whatever is not written yet, and waits for it. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.chain = this.chain.then(() => this.write());
    await this.chain;
  }

  private async write(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    // Collected when the write starts, in one synchronous step: a consistent picture of the account.
    const state: PersistedState = {
      format: FORMAT,
      version: VERSION,
      saved_at: new Date().toISOString(),
      ...this.collect(),
    };
    const text = JSON.stringify(state);
    try {
      const handle = await fs.promises.open(this.tmp, 'w', 0o600);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.promises.rename(this.tmp, this.file);
    } catch (error) {
      // Kept dirty: the next change (or close) tries again.
      this.dirty = true;
      this.log(`could not write the state file ${this.file}: ${(error as Error).message}`);
    }
  }
}
