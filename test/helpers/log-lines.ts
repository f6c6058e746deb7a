import { Writable } from 'node:stream';

export type Line = Record<string, any>;

/** A pino destination that keeps every JSON line. */
export function captured(): { stream: Writable; lines: Line[] } {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  return { stream, lines };
}
