// A second copy of the service beside an ingest fixture: the same database and ingest secret, a
// data directory of its own, the settings the test shares between them; and its worker's drain of
// the queue (the scan job with the clean scanners), as the other copy's worker daemon would do it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SettingName } from '../../../lib/config/index.js';
import { mailPort, recordingOutbound, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { cleanScanners } from '../../../lib/scan/index.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';
import type { IngestFixture } from '../ingest/setup.js';

export interface SecondCopy {
  api: TestApi;
  dataDir: string;
  /** Its worker works the queue off. */
  drain(): Promise<void>;
  close(): Promise<void>;
}

export async function secondCopy(
  a: IngestFixture,
  backendName: string,
  values: Partial<Record<SettingName, unknown>>,
): Promise<SecondCopy> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svcmail-copy-b-'));
  const url = a.api.config.get('datastores:sql:url');
  const api = await startTestApi(
    { name: backendName, open: async () => ({ url, drop: async () => undefined }) },
    {
      ...values,
      data_dir: dataDir,
      'mail:transport:ingest:secret': a.api.config.get('mail:transport:ingest:secret'),
      'mail:jobs:wake_address': '',
    },
  );
  return {
    api,
    dataDir,
    async drain() {
      const port = mailPort(api.deps);
      const worker: WorkerDeps = { ...api.deps, port, outbound: recordingOutbound(api.deps, port), scanners: cleanScanners, control: {} };
      await drainQueue(worker, 'copy-b-worker');
    },
    async close() {
      await api.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
