// Live progress while the drill runs: on a terminal, a table redrawn in place four times a second;
// otherwise (a pipe, a CI log) one plain line every few seconds.
import readline from 'node:readline';

export interface ProgressRow {
  elapsedS: number;
  stage: string;
  arrived: number;
  buyers: number;
  queued: number;
  admitted: number;
  holding: number;
  paid: number;
  confirmed: number;
  refunded: number;
  soldOut: number;
  done: number;
  product?: { available: number; held: number; sold: number; total: number };
  room?: { waiting: number; active: number };
}

const TTY_EVERY_MS = 250;
const PLAIN_EVERY_MS = 5000;

export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private drawn = 0;
  private readonly tty: boolean;

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly read: () => ProgressRow,
  ) {
    this.tty = out.isTTY === true;
  }

  start(): void {
    this.timer = setInterval(() => this.draw(), this.tty ? TTY_EVERY_MS : PLAIN_EVERY_MS);
    this.timer.unref();
    this.draw();
  }

  /** Draws the last state once more and stops; what follows prints below it. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.draw();
    this.drawn = 0;
  }

  private draw(): void {
    const row = this.read();
    if (!this.tty) {
      this.out.write(`${plainLine(row)}\n`);
      return;
    }
    const lines = table(row);
    if (this.drawn) {
      readline.moveCursor(this.out, 0, -this.drawn);
      readline.cursorTo(this.out, 0);
      readline.clearScreenDown(this.out);
    }
    this.out.write(`${lines.join('\n')}\n`);
    this.drawn = lines.length;
  }
}

function plainLine(r: ProgressRow): string {
  const parts = [
    `${r.elapsedS.toFixed(0)}s ${r.stage}`,
    `arrived ${r.arrived}/${r.buyers}`,
    `queued ${r.queued}`,
    `admitted ${r.admitted}`,
    `holding ${r.holding}`,
    `paid ${r.paid}`,
    `confirmed ${r.confirmed}`,
    `refunded ${r.refunded}`,
    `sold out ${r.soldOut}`,
    `done ${r.done}`,
  ];
  if (r.product) parts.push(`stock ${r.product.available} free ${r.product.held} held ${r.product.sold} sold`);
  if (r.room) parts.push(`room ${r.room.waiting} waiting ${r.room.active} inside`);
  return `drill: ${parts.join(', ')}`;
}

function bar(done: number, total: number, width = 30): string {
  const filled = total ? Math.round((Math.min(done, total) / total) * width) : 0;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

function table(r: ProgressRow): string[] {
  const cell = (label: string, value: number | string) => `${label.padEnd(10)}${String(value).padStart(8)}`;
  const lines = [
    `drill ${r.stage.padEnd(24)} ${r.elapsedS.toFixed(1).padStart(7)} s   buyers done ${bar(r.done, r.buyers)} ${r.done}/${r.buyers}`,
    `  ${cell('arrived', r.arrived)}   ${cell('queued', r.queued)}   ${cell('admitted', r.admitted)}   ${cell('holding', r.holding)}`,
    `  ${cell('paid', r.paid)}   ${cell('confirmed', r.confirmed)}   ${cell('refunded', r.refunded)}   ${cell('sold out', r.soldOut)}`,
  ];
  if (r.product) {
    const p = r.product;
    lines.push(
      `  ${cell('available', p.available)}   ${cell('held', p.held)}   ${cell('sold', p.sold)}   units sold ${bar(p.sold, p.total, 20)}`,
    );
  }
  if (r.room) lines.push(`  ${cell('in room', r.room.waiting)}   ${cell('inside', r.room.active)}`);
  return lines;
}
