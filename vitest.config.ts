import { configDefaults, defineConfig } from 'vitest/config';
import { LongestFirst } from './test/sequencer.js';

/**
 * Files that share their worker's imports (isolate: false) rather than each loading lib/ afresh.
 * What admits a folder: its files leave no module state behind (no mocks, fake timers or stubbed
 * globals; a vi.spyOn is restored) and lean on none — lib/ keeps its state per Config or store
 * (WeakMaps), and each integration file starts its own app on a fresh database (test/helpers/api.ts).
 * Not here: test/unit/storage (another engineer's), the folders that start processes (little to
 * gain), and test/integration/keys (lib/keys/recipients.ts caches federation answers per process).
 */
const SHARED = ['test/unit/!(storage)/**/*.test.ts', 'test/integration/{mail,pim,api,escrow,lifecycle,signin}/**/*.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default (available cores − 1) is a single worker on the 2-core machines this runs on;
    // most files wait on sockets, child processes and timers, so two forks keep both cores busy.
    maxWorkers: 2,
    // The longest files first, so the two forks end together (test/sequencer.ts).
    sequence: { sequencer: LongestFirst },
    // Nothing leaves this machine: every process a test starts (CLI, daemons) asks DNS questions of a
    // loopback port where nothing answers unless the test names its own server; never the system's
    // resolver. In-process servers get the same from test/helpers/api.ts.
    env: {
      NODE_ENV: 'test',
      // Every JSON answer of a defineRoute route is checked against its declared schema (lib/http/define-route.ts).
      SVCMAIL_CHECK_RESPONSES: '1',
      SVCMAIL__mail__dns__nameservers: '["127.0.0.1:9"]',
      SVCMAIL__mail__dns__check_nameservers: '["127.0.0.1:9"]',
    },
    projects: [
      {
        extends: true,
        test: { name: 'shared', include: SHARED, isolate: false },
      },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SHARED] } },
    ],
  },
});
