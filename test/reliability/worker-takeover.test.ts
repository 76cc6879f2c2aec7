// Mail a dead worker held does not wait out its lease (issue: two hosts, finding 5). A real worker
// daemon claims entries with a 120 s lease and hangs in its scans (an rspamd that takes connections
// and never answers); it is killed with SIGKILL. A worker started after it sees that the holder's
// process is gone and takes the entries at once: every message is filed within seconds, exactly
// once — not after the lease.
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageModel, type Message } from '../../lib/mail/index.js';
import { sqlBackends } from '../helpers/databases.js';
import { daemons, entries, exited, type Daemons } from '../integration/ingest/daemons.js';
import { ingestFixture, message, type IngestFixture } from '../integration/ingest/setup.js';

const backends = await sqlBackends();
const LEASE_SECONDS = 120;

describe.each(backends)('a worker killed while holding leases ($name)', (backend) => {
  let f: IngestFixture;
  let d: Daemons;
  let silent: Server;
  const held: Socket[] = [];
  beforeAll(async () => {
    f = await ingestFixture(backend);
    d = daemons(f);
    silent = createServer((s) => void held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  }, 60_000);
  afterAll(async () => {
    d?.killAll();
    for (const s of held) s.destroy();
    silent?.close();
    await f?.close();
  });

  it('its entries are taken over as soon as another worker starts, and filed once', async () => {
    const txs: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: `held ${i}` }), tx: `held-${backend.name}-${i}` });
      expect(r.status).toBe(202);
      txs.push(r.body.transactionId as string);
    }
    const silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    const lease = { 'mail:jobs:scan:lease_seconds': LEASE_SECONDS };
    const first = await d.start('worker', {}, { ...lease, 'mail:scan:rspamd:url': silentUrl, 'mail:scan:timeout_ms': 600_000 });
    const until = Date.now() + 60_000;
    // It claims them (in one round or two) and hangs in their scans.
    const claimed = () => entries(f).count({ transactionId: { $in: txs }, claimedBy: { $ne: null } });
    while ((await claimed()) < 3) {
      if (Date.now() > until || first.exitCode !== null) throw new Error(`the first worker claimed nothing: ${d.said(first)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 500));
    const heldByFirst = await claimed();
    first.kill('SIGKILL');
    expect(await exited(first)).toBe('SIGKILL');
    expect(await entries(f).count({ transactionId: { $in: txs }, state: 'queued' })).toBe(txs.length);
    expect(heldByFirst).toBeGreaterThanOrEqual(3);

    const started = Date.now();
    const second = await d.start('worker', {}, lease);
    while ((await entries(f).count({ transactionId: { $in: txs }, state: 'delivered' })) < txs.length) {
      if (Date.now() - started > 30_000) throw new Error(`not taken over: ${d.said(second)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const tookMs = Date.now() - started;
    expect(tookMs, 'filed long before the 120 s lease ended').toBeLessThan(30_000);
    const filed = await f.api.deps.store.repo<Message>(MessageModel).list({ filter: { mailboxUid: f.users.aliceBox.uid }, limit: 100 });
    for (let i = 0; i < 5; i++) expect(filed.filter((m) => m.subject === `held ${i}`)).toHaveLength(1);
    second.kill('SIGTERM');
    expect(await exited(second)).toBe(0);
    process.stdout.write(
      `worker takeover (${backend.name}): ${txs.length} entries held by a killed worker filed ${tookMs} ms after the next worker started (lease ${LEASE_SECONDS} s)\n`,
    );
  }, 120_000);
});
