// GET /api/metrics after real traffic (hand-offs through /internal/mta, the scan job with the dev
// clean scanner, real rspamd and clamd, and fail-closed scanning; a send through the real send route
// and a sendmail-compatible recorder), and GET /api/admin/diagnostics (versions, heartbeats, queue
// depths, scanner and transport reachability), on both SQL backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeartbeatModel, startHeartbeat, type Heartbeat } from '../../../lib/settings/index.js';
import { IngestEntryModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { checkWorker } from '../../../lib/setup/doctor/remote-checks.js';
import { startTestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { EICAR, GTUBE, freePort, requireScanners, startScanners, type Scanners } from '../../helpers/scanners.js';
import { ingestFixture, message, type IngestFixture } from '../ingest/setup.js';
import { draft, recorder, type Recorder } from '../send/helpers.js';

const withScanners = requireScanners();
const backends = await sqlBackends();
let scanners: Scanners;
beforeAll(async () => {
  if (!withScanners) return;
  scanners = await startScanners();
}, 150_000);
afterAll(async () => scanners?.stop());

/** The value of one sample line of the Prometheus text, or null when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | null {
  const want = Object.entries(labels);
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (want.every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return null;
}

describe.runIf(withScanners).each(backends)('metrics and diagnostics after real traffic ($name)', (backend) => {
  let fx: IngestFixture;
  let rec: Recorder;
  let real: WorkerDeps;
  beforeAll(async () => {
    rec = recorder();
    fx = await ingestFixture(backend, {
      'mail:scan:rspamd:url': scanners.rspamdUrl,
      'mail:scan:clamd:address': scanners.clamdAddress,
      'mail:transport:sendmail:path': rec.bin,
      'mail:transport:sendmail:log_path': rec.log,
    });
    real = fx.worker({
      env: 'production',
      values: { 'mail:scan:rspamd:url': scanners.rspamdUrl, 'mail:scan:clamd:address': scanners.clamdAddress },
    });
  }, 60_000);
  afterAll(async () => fx?.close());

  const handOff = async (raw: string) => {
    const r = await fx.deliver({ to: ['alice@example.test'], raw });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    return r.body.transactionId as string;
  };
  const entryOf = async (tx: string) =>
    (await fx.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: tx } }))[0];

  it('counts scan verdicts, deliveries and sends; reports queue and Outbox states', async () => {
    // The development clean scanner (the worker of a development setup without scanners).
    const devTx = await handOff(message({ subject: 'dev scanner' }));
    await drainQueue(fx.worker({ scanners: 'clean' }), 'dev-worker');
    expect(await entryOf(devTx)).toMatchObject({ state: 'delivered' });
    // Real rspamd and clamd: clean, spam (GTUBE), virus (EICAR).
    const txs = [
      await handOff(message({ subject: 'clean' })),
      await handOff(message({ subject: 'spam', body: GTUBE })),
      await handOff(message({ subject: 'virus', body: EICAR })),
    ];
    await drainQueue(real, 'real-worker');
    expect((await Promise.all(txs.map(entryOf))).map((e) => e.state)).toEqual(['delivered', 'junk', 'quarantined']);
    // Fail closed: scanners that do not answer outside development quarantine the message.
    const failTx = await handOff(message({ subject: 'no scanner' }));
    const dead = `127.0.0.1:${await freePort()}`;
    await drainQueue(
      fx.worker({ env: 'production', values: { 'mail:scan:rspamd:url': `http://${dead}`, 'mail:scan:clamd:address': dead } }),
      'blind-worker',
    );
    expect(await entryOf(failTx)).toMatchObject({ state: 'quarantined' });
    // One send through the real route (outbound scan by the real scanners, the recorder as sendmail).
    const d = await draft(fx.api, fx.users.aliceBox.uid, { from: 'alice@example.test', to: ['carol@example.net'] });
    const sent = await fx.api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: fx.users.alice, body: {} });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(rec.runs()).toHaveLength(1);

    const r = await fx.api.call('GET', '/api/metrics', { token: fx.users.admin });
    expect(r.status).toBe(200);
    const text = r.body as string;
    expect(text).toContain('# TYPE svcmail_scan_verdicts_total counter');
    const v = (verdict: string) => sample(text, 'svcmail_scan_verdicts_total', { verdict });
    expect([v('clean'), v('spam'), v('virus'), v('failed')]).toEqual([2, 1, 1, 1]);
    expect(v('suspect')).toBeNull();
    const o = (outcome: string) => sample(text, 'svcmail_deliveries_total', { outcome });
    expect([o('delivered'), o('junk'), o('quarantined')]).toEqual([2, 1, 2]);
    expect(sample(text, 'svcmail_sends_total', { result: 'sent' })).toBe(1);
    expect(sample(text, 'svcmail_outbound_jobs', { state: 'sent' })).toBe(1);
    expect(sample(text, 'svcmail_outbound_jobs', { state: 'queued' })).toBe(0);
    expect(sample(text, 'svcmail_ingest_entries', { state: 'delivered' })).toBe(2);
    expect(sample(text, 'svcmail_ingest_entries', { state: 'queued' })).toBe(0);
    expect(sample(text, 'svcmail_http_requests_total', { method: 'POST', route: '/api/mail/messages/:id/send', status: '200' })).toBe(1);
  }, 60_000);

  it.each([
    ['no token', null, 401, 'api-100'],
    ['a plain user', 'alice', 403, 'api-103'],
    ['an admin without elevation', 'plainAdmin', 403, 'api-104'],
  ])('metrics and diagnostics refuse %s', async (_w, who, status, code) => {
    const token = who === 'alice' ? fx.users.alice : who === 'plainAdmin' ? await fx.api.token({ uid: 'root', roles: ['admin'] }) : null;
    for (const path of ['/api/metrics', '/api/admin/diagnostics']) {
      const r = await fx.api.call('GET', path, { token });
      expect(r.status, path).toBe(status);
      expect(r.body.code, path).toBe(code);
      expect(JSON.stringify(r.body)).not.toMatch(/svcmail_|rspamd|heartbeat/);
    }
  });

  it('diagnostics: versions, heartbeats, queue depths, reachable scanners and transport', async () => {
    const writer = startHeartbeat(fx.api.deps, 'worker', { instance: 'worker-host:4242' });
    await writer.beat();
    // A push process that went silent long ago.
    const long = new Date(Date.now() - 3600_000);
    await fx.api.deps.store.repo<Heartbeat>(HeartbeatModel).create({
      daemon: 'push',
      instance: 'old-host:1',
      host: 'old-host',
      pid: 1,
      productVersion: '0.0.1',
      startedAt: long,
      lastSeenAt: long,
      intervalSeconds: 30,
      stoppedAt: null,
      details: { connections: 7 },
    });
    const stale = await fx.api.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) });
    const r = await fx.api.call('GET', '/api/admin/diagnostics', { token: stale }); // reading needs no fresh elevation
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const d = r.body;
    expect(d.versions).toMatchObject({
      product: expect.stringMatching(/^\d+\.\d+\.\d+/),
      node: process.version,
      datastore: { kind: backend.name },
    });
    expect(d.versions.datastore.version).toMatch(backend.name === 'postgres' ? /^PostgreSQL \d+/ : /^SQLite 3\.\d+/);
    const worker = d.daemons.find((x: { daemon: string }) => x.daemon === 'worker');
    expect(worker).toMatchObject({ alive: 1, processes: [{ instance: 'worker-host:4242', alive: true, stoppedAt: null }] });
    const push = d.daemons.find((x: { daemon: string }) => x.daemon === 'push');
    expect(push).toMatchObject({ alive: 0, processes: [{ instance: 'old-host:1', alive: false }] });
    expect(push.processes[0].ageSeconds).toBeGreaterThanOrEqual(3600);
    expect(d.queues.ingest).toMatchObject({ queued: 0, delivered: 2, junk: 1, quarantined: 2 });
    expect(d.queues.outbound).toMatchObject({ sent: 1, queued: 0, failed: 0 });
    expect(d.scanners.rspamd).toMatchObject({ reachable: true });
    expect(d.scanners.clamd).toMatchObject({ reachable: true, detail: expect.stringContaining('OK') });
    expect(d.transport).toMatchObject({ provider: 'sendmail', reachable: true, detail: `${rec.bin} is executable` });
    expect(d.status).toBe('degraded');
    expect(d.problems).toEqual(
      expect.arrayContaining(['no api daemon has sent a heartbeat recently', 'no push daemon has sent a heartbeat recently']),
    );
    expect(d.problems.join('\n')).not.toMatch(/worker|rspamd|clamd|transport/);

    // svcmail doctor's worker check reads the same heartbeats.
    const doctorCtx = { config: fx.api.config, explicit: new Set<never>() };
    expect(await checkWorker(doctorCtx)).toMatchObject({ id: 'worker', status: 'ok', detail: expect.stringContaining('worker-host:4242') });
    await writer.stop();
    expect(await fx.api.deps.store.repo<Heartbeat>(HeartbeatModel).findOne({ instance: 'worker-host:4242' })).toMatchObject({
      stoppedAt: expect.any(Date),
    });
    expect(await checkWorker(doctorCtx)).toMatchObject({ status: 'fail', detail: expect.stringMatching(/worker-host:4242 stopped at/) });
    const after = await fx.api.call('GET', '/api/admin/diagnostics', { token: fx.users.admin });
    expect(after.body.daemons.find((x: { daemon: string }) => x.daemon === 'worker')).toMatchObject({ alive: 0 });
    expect(after.body.problems).toContain('no worker daemon has sent a heartbeat recently');
  }, 30_000);
});

describe.each(backends.slice(0, 1))('diagnostics with nothing reachable ($name)', (backend) => {
  it('reports unreachable scanners and cloud transport; doctor warns when no worker ever ran', async () => {
    const dead = `127.0.0.1:${await freePort()}`;
    const api = await startTestApi(backend, {
      'mail:scan:rspamd:url': `http://${dead}`,
      'mail:scan:clamd:address': dead,
      'mail:diagnostics:probe_timeout_ms': 1000,
      'mail:transport:provider': 'api',
      'mail:transport:api:url': `http://${dead}/send`,
      'mail:transport:api:token': 'token-0123456789',
    });
    try {
      const admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
      const t0 = Date.now();
      const d = (await api.call('GET', '/api/admin/diagnostics', { token: admin })).body;
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(d.scanners.rspamd).toMatchObject({ reachable: false, detail: expect.stringMatching(/ECONNREFUSED|cannot be connected/) });
      expect(d.scanners.clamd).toMatchObject({ reachable: false });
      expect(d.transport).toMatchObject({ provider: 'api', reachable: false });
      expect(d.status).toBe('degraded');
      expect(d.problems).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^rspamd unreachable/),
          expect.stringMatching(/^clamd unreachable/),
          expect.stringMatching(/^mail transport/),
        ]),
      );
      expect(await checkWorker({ config: api.config, explicit: new Set() })).toMatchObject({
        status: 'warn',
        detail: 'no worker has recorded a heartbeat yet',
      });
    } finally {
      await api.close();
    }
  });
});
