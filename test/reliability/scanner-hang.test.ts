// Reliability, fault injection: a scanner hanging. An rspamd URL and a clamd address that accept
// connections and never answer: the scan job gives up after mail:scan:timeout_ms and takes the
// spec's fail-closed path (Spec: Inbound message — spam scanner unreachable: Junk with
// SCAN_ENGINE_UNAVAILABLE; virus scan failed: Quarantine). The other scanner is the real one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type SettingName } from '../../lib/config/index.js';
import {
  IngestEntryModel,
  mailPort,
  QuarantineModel,
  recordingOutbound,
  type IngestEntry,
  type WorkerDeps,
} from '../../lib/ingest/index.js';
import { drainQueue } from '../../lib/jobs/index.js';
import { createLogger } from '../../lib/log/index.js';
import { FolderModel, MessageModel, type Folder, type Message } from '../../lib/mail/index.js';
import { realScanners, SCAN_ENGINE_UNAVAILABLE } from '../../lib/scan/index.js';
import { AUDIENCE, ISSUER, TEST_SECRET } from '../helpers/api.js';
import { sqlBackends } from '../helpers/databases.js';
import { requireScanners, startClamd, startRspamd } from '../helpers/scanners.js';
import { silentServer } from './peers.js';
import { INGEST_SECRET, startWorld, type World } from './world.js';

const withScanners = requireScanners();
const backends = await sqlBackends();
const SCAN_TIMEOUT = 800;
/** Time a scan round may take beyond the scanner time limit (parsing, filing; a loaded CI machine). */
const SLACK_MS = 8000;

let rspamd: Awaited<ReturnType<typeof startRspamd>>;
let clamd: Awaited<ReturnType<typeof startClamd>>;
let silentRspamd: Awaited<ReturnType<typeof silentServer>>;
let silentClamd: Awaited<ReturnType<typeof silentServer>>;
beforeAll(async () => {
  if (!withScanners) return;
  [rspamd, clamd, silentRspamd, silentClamd] = await Promise.all([startRspamd(), startClamd(), silentServer(), silentServer()]);
}, 180_000);
afterAll(async () => {
  await Promise.all([rspamd?.stop(), clamd?.stop(), silentRspamd?.stop(), silentClamd?.stop()]);
});

describe.runIf(withScanners).each(backends)('a scanner hanging ($name)', (backend) => {
  const counts = { faults: 0 };
  let w: World;
  beforeAll(async () => {
    w = await startWorld(backend);
  }, 120_000);
  afterAll(async () => w?.close());

  /** Worker dependencies over the same store, production mode (no development fallback). */
  const worker = (values: Partial<Record<SettingName, unknown>>): WorkerDeps => {
    const config = loadConfig({
      env: { NODE_ENV: 'production' },
      values: {
        'auth:secret': TEST_SECRET,
        'auth:options:audience': AUDIENCE,
        'auth:options:issuer': ISSUER,
        'log:level': 'silent',
        'datastores:sql:url': w.api.config.get('datastores:sql:url'),
        data_dir: w.dataDir,
        'mail:transport:ingest:secret': INGEST_SECRET,
        'mail:jobs:wake_address': '',
        'mail:ingest:retry_backoff_seconds': 0,
        'mail:scan:timeout_ms': SCAN_TIMEOUT,
        ...values,
      },
    });
    const deps = { config, store: w.api.deps.store, events: w.api.deps.events, log: createLogger({ level: 'silent' }) };
    const port = mailPort(deps);
    return { ...deps, port, outbound: recordingOutbound(deps, port), scanners: realScanners(config), control: {} };
  };

  let n = 0;
  /** Hands a message off, runs the scan job, answers the entry and how long the job took. */
  async function scanOne(deps: WorkerDeps): Promise<{ entry: IngestEntry & { uid: string }; ms: number }> {
    n += 1;
    const raw = `From: Sender <sender@remote.example>\r\nTo: alice@example.test\r\nSubject: hanging scanner ${n}\r\nMessage-ID: <hang-${n}-${backend.name}@remote.example>\r\n\r\nHello.\r\n`;
    const res = await fetch(`${w.api.url}/internal/mta/deliver`, {
      method: 'POST',
      body: raw,
      headers: {
        authorization: `Bearer ${INGEST_SECRET}`,
        'content-type': 'message/rfc822',
        'x-envelope-from': 'sender%40remote.example',
        'x-envelope-to': 'alice%40example.test',
      },
    });
    const body = (await res.json()) as { transactionId: string };
    expect(res.status).toBe(202);
    const t0 = Date.now();
    await drainQueue(deps, `w-${n}`);
    const ms = Date.now() - t0;
    const [entry] = await w.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: body.transactionId } });
    counts.faults += 1;
    return { entry, ms };
  }

  it('rspamd accepts and never answers: Junk with SCAN_ENGINE_UNAVAILABLE, within the time limit', async () => {
    const before = silentRspamd.connections;
    const { entry, ms } = await scanOne(
      worker({ 'mail:scan:rspamd:url': `http://127.0.0.1:${silentRspamd.port}`, 'mail:scan:clamd:address': clamd.address }),
    );
    expect(silentRspamd.connections).toBeGreaterThan(before);
    expect(ms).toBeGreaterThanOrEqual(SCAN_TIMEOUT - 50);
    expect(ms).toBeLessThan(SCAN_TIMEOUT + SLACK_MS);
    expect(entry).toMatchObject({ state: 'junk', folderRole: 'junk', attempts: 0 });
    expect(entry.verdict).toMatchObject({ spam: 'suspect', symbols: [SCAN_ENGINE_UNAVAILABLE] });
    const msg = await w.api.deps.store.repo<Message>(MessageModel).get(entry.messageUid!);
    const junk = await w.api.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid: w.ids.mailbox, role: 'junk' });
    expect(msg?.folderUid).toBe(junk!.uid);
  }, 60_000);

  it('clamd accepts and never answers: Quarantine (virus scan failed), within the time limit', async () => {
    const before = silentClamd.connections;
    const { entry, ms } = await scanOne(
      worker({ 'mail:scan:rspamd:url': rspamd.url, 'mail:scan:clamd:address': `127.0.0.1:${silentClamd.port}` }),
    );
    expect(silentClamd.connections).toBeGreaterThan(before);
    expect(ms).toBeGreaterThanOrEqual(SCAN_TIMEOUT - 50);
    expect(ms).toBeLessThan(SCAN_TIMEOUT + SLACK_MS);
    expect(entry).toMatchObject({ state: 'quarantined', messageUid: null });
    expect(await w.api.deps.store.repo<{ reason: string; mailboxUid: string }>(QuarantineModel).get(entry.uid)).toMatchObject({
      reason: 'virus-scan-failed',
      mailboxUid: w.ids.mailbox,
    });
  }, 60_000);

  it('both hang: Quarantine wins, and the message is in no folder', async () => {
    const { entry, ms } = await scanOne(
      worker({
        'mail:scan:rspamd:url': `http://127.0.0.1:${silentRspamd.port}`,
        'mail:scan:clamd:address': `127.0.0.1:${silentClamd.port}`,
      }),
    );
    expect(ms).toBeLessThan(SCAN_TIMEOUT + SLACK_MS);
    expect(entry).toMatchObject({ state: 'quarantined', messageUid: null });
    // eslint-disable-next-line no-console -- the figures of the run, for the report
    console.log(`reliability: scanner hanging (${backend.name}): faults tried ${counts.faults}, routes checked 1 (scan job), leaks 0`);
  }, 60_000);
});
