// The bench's teardown: everything started registers how to stop it; Ctrl-C and the end of the run both unwind
// the list once, newest first (client sockets, API, worker, emulator, then Temporal and Postgres).

const closers: Array<{ name: string; close: () => Promise<void> }> = [];
let tearingDown: Promise<void> | undefined;
export const aborter = new AbortController();

export function onTeardown(name: string, close: () => Promise<void>): void {
  // Started while already stopping (Ctrl-C during start-up): stop it at once.
  if (tearingDown) void close().catch(() => {});
  else closers.push({ name, close });
}

/** True once the run is stopping (a child exiting then is expected). */
export const isTearingDown = (): boolean => tearingDown !== undefined;

export function teardown(): Promise<void> {
  tearingDown ??= (async () => {
    while (closers.length) {
      const { name, close } = closers.pop()!;
      try {
        await close();
        if (aborter.signal.aborted) console.error(`  stopped: ${name}`);
      } catch (err) {
        console.error(`teardown: ${name}: ${(err as Error).message}`);
      }
    }
  })();
  return tearingDown;
}

let firstSignalAt = 0;
export function onSignal(signal: NodeJS.Signals): void {
  if (firstSignalAt) {
    // `npx tsx` relays the terminal's Ctrl-C, so one key press arrives twice: only a later one forces.
    if (Date.now() - firstSignalAt < 1500) return;
    // A second Ctrl-C: leave now; the children's death signals still stop them.
    console.error(`${signal} again: exiting without waiting`);
    process.exit(130);
  }
  firstSignalAt = Date.now();
  console.error(`\n${signal}: stopping the crowd and everything this run started (Ctrl-C again to force)`);
  aborter.abort(new Error(signal));
  void teardown().finally(() => process.exit(130));
}
