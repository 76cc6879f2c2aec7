// One slow scan holds only its own message: a round files its entries as their scans finish. Real
// rspamd whose resolver never answers for one sender's domain (a dead authoritative server: rspamd
// waits out its DNS time limit on SPF and DMARC), beside messages whose lookups are answered at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { runScanRound } from '../../../lib/jobs/index.js';
import { cleanScanners, realScanners } from '../../../lib/scan/index.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { storeBackends } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRspamd, type Rspamd } from '../../helpers/scanners.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const present = requirePrograms('rspamd');
const [backend] = await storeBackends();

describe.runIf(present)('a slow scan in a round', () => {
  let resolver: DnsServer;
  let rspamd: Rspamd;
  let f: IngestFixture;
  let w: WorkerDeps;
  beforeAll(async () => {
    resolver = await startDnsServer({}, { silent: (name) => name.endsWith('slow.example') });
    rspamd = await startRspamd({ resolver });
    f = await ingestFixture(backend);
    const base = f.worker({ values: { 'mail:scan:rspamd:url': rspamd.url, 'mail:jobs:scan:batch_size': 20 } });
    w = { ...base, scanners: { spam: realScanners(base.config).spam, virus: cleanScanners.virus } };
  }, 150_000);
  afterAll(async () => {
    await f?.close();
    await rspamd?.stop();
    await resolver?.close();
  });

  it("holds only its own entry: the round's other messages are filed while it is still being scanned", async () => {
    const handOff = async (domain: string, tx: string) => {
      const r = await f.deliver({
        from: `someone@${domain}`,
        to: ['alice@example.test'],
        raw: message({ from: `someone@${domain}`, subject: tx }),
        tx,
        headers: { 'x-envelope-client-address': '203.0.113.5' },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
    };
    await handOff('slow.example', 'slow-0');
    for (let i = 0; i < 6; i++) await handOff('fast.example', `fast-${i}`);
    const entries = () => f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ limit: 100 });
    const stateOf = (rows: IngestEntry[], tx: string) => rows.find((e) => e.transactionId === `mta:${tx}`)!.state;

    const round = runScanRound(w, 'slow-scan-test');
    let seen: IngestEntry[] = [];
    for (let i = 0; i < 200; i++) {
      seen = await entries();
      if (Array.from({ length: 6 }, (_, k) => stateOf(seen, `fast-${k}`)).every((s) => s !== 'queued')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let k = 0; k < 6; k++) expect(stateOf(seen, `fast-${k}`), `fast-${k}`).toMatch(/^(delivered|junk)$/);
    expect(stateOf(seen, 'slow-0'), 'the slow scan is still waiting for DNS').toBe('queued');
    expect(resolver.queries.some((q) => q.endsWith('slow.example'))).toBe(true);

    const r = await round;
    expect(r).toMatchObject({ claimed: 7, finished: 7, retried: 0, failed: 0 });
    expect(stateOf(await entries(), 'slow-0')).toMatch(/^(delivered|junk)$/);
  });
});
