/**
 * Coalesces concurrent calls into batches: while one batch's call runs, new items wait, and the
 * next call takes them all (at most `max`). Under a crowd, hundreds of small reads of the same kind
 * become a few statements, each one round trip and one result for many callers.
 */
export class Batcher<I, O> {
  private waiting: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private running = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly max = 256,
  ) {}

  /** The answer for `item`, from the batch it joined (answers in the order of the items). */
  call(item: I): Promise<O> {
    const answer = new Promise<O>((resolve, reject) => this.waiting.push({ item, resolve, reject }));
    if (!this.running) void this.drain();
    return answer;
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length) {
        const batch = this.waiting.splice(0, this.max);
        try {
          const out = await this.run(batch.map((w) => w.item));
          if (out.length !== batch.length) throw new Error(`a batch of ${batch.length} got ${out.length} answers`);
          batch.forEach((w, i) => w.resolve(out[i]));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
