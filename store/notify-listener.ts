import pg from 'pg';

// One process's LISTEN connection to Postgres: every channel it listens to, one connection, kept
// open (a lost one is made again). Notifications sent while no one listened are gone, so each
// channel says what to do after a (re)connect: read again whatever it keeps.

const RECONNECT_MS = 1_000;

interface Channel {
  onPayload: (payload: string) => void;
  /** After every connect, the first included: whatever was sent meanwhile is lost. */
  onListening: () => void;
}

export class NotifyListener {
  private readonly channels = new Map<string, Channel>();
  private client: pg.Client | null = null;
  private reconnect?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly log: (line: string) => void = () => {},
  ) {}

  /** Listens to `channel` (call before start()). */
  on(channel: string, onPayload: (payload: string) => void, onListening: () => void = () => {}): void {
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
    this.channels.set(channel, { onPayload, onListening });
  }

  async start(): Promise<void> {
    await this.listen();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnect);
    await this.client?.end().catch(() => {});
    this.client = null;
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    let dropped = false;
    const drop = (why: string): void => {
      if (dropped) return;
      dropped = true;
      if (!this.closed) this.log(`notifications: connection lost (${why}); reconnecting`);
      this.relisten(client);
    };
    client.on('notification', (msg) => {
      if (msg.payload) this.channels.get(msg.channel)?.onPayload(msg.payload);
    });
    client.on('error', (err) => drop(err.message));
    client.on('end', () => drop('closed'));
    try {
      await client.connect();
      for (const name of this.channels.keys()) await client.query(`LISTEN ${name}`);
      this.client = client;
      for (const channel of this.channels.values()) channel.onListening();
    } catch (err) {
      drop((err as Error).message);
    }
  }

  private relisten(client: pg.Client): void {
    if (this.closed || this.reconnect) return;
    if (this.client === client) this.client = null;
    client.end().catch(() => {});
    this.reconnect = setTimeout(() => {
      this.reconnect = undefined;
      void this.listen();
    }, RECONNECT_MS);
    this.reconnect.unref();
  }
}
