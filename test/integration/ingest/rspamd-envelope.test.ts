// rspamd judges the real sender: the SMTP session the MTA saw (client address, HELO, reverse name,
// queue id) travels through the hand-off headers X-Envelope-Client-* and the ingest entry to the
// worker's scan, as rspamd's milter would pass it. Without it rspamd counts the message as local
// (it comes from the worker's loopback address) and skips SPF, DMARC, the HELO checks and the IP
// lists. Outgoing mail is scanned as the authenticated user's. Real rspamd, loopback resolver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { cleanScanners, realScanners } from '../../../lib/scan/index.js';
import { scanOutbound, type SendDeps } from '../../../lib/send/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';
import { startRspamd, type Rspamd } from '../../helpers/scanners.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const present = requirePrograms('rspamd');
const [backend] = await storeBackends();

describe.runIf(present)('the SMTP session reaches rspamd', () => {
  let rspamd: Rspamd;
  let f: IngestFixture;
  let w: WorkerDeps;
  beforeAll(async () => {
    rspamd = await startRspamd({ logLevel: 'info' });
    f = await ingestFixture(backend);
    const base = f.worker({ values: { 'mail:scan:rspamd:url': rspamd.url } });
    // rspamd real; clamd is not what this is about (its own tests run it).
    w = { ...base, scanners: { spam: realScanners(base.config).spam, virus: cleanScanners.virus } };
  }, 150_000);
  afterAll(async () => {
    await f?.close();
    await rspamd?.stop();
  });

  /** Hands a message from `domain` off with the given extra headers, files it, answers its entry and the DNS questions rspamd asked. */
  const handOff = async (domain: string, headers: Record<string, string>) => {
    const before = rspamd.resolver.queries.length;
    const r = await f.deliver({
      from: `someone@${domain}`,
      to: ['alice@example.test'],
      raw: message({ from: `someone@${domain}`, subject: `from ${domain}` }),
      tx: `q-${domain}`,
      headers,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    await drainQueue(w, 'rspamd-envelope');
    const entry = (await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).findOne({ transactionId: `mta:q-${domain}` }))!;
    expect(['delivered', 'junk'], 'filed, in the Inbox or Junk as rspamd judged').toContain(entry.state);
    return { entry, symbols: (entry.verdict as { symbols: string[] }).symbols, asked: rspamd.resolver.queries.slice(before) };
  };

  it('with the client address, HELO and reverse name, SPF, the HELO checks and the IP lists run', async () => {
    const { entry, symbols, asked } = await handOff('spf-checked.example', {
      'x-envelope-client-address': '203.0.113.9',
      'x-envelope-client-helo': encodeURIComponent('mx.spf-checked.example'),
      'x-envelope-client-hostname': 'MX.spf-checked.example',
    });
    expect(entry).toMatchObject({
      clientAddress: '203.0.113.9',
      clientHelo: 'mx.spf-checked.example',
      clientHostname: 'mx.spf-checked.example',
    });
    expect(asked, 'SPF of the envelope sender').toContain('TXT spf-checked.example');
    expect(asked, 'the HELO name').toContain('A mx.spf-checked.example');
    expect(
      asked.some((q) => q.startsWith('A 9.113.0.203.')),
      'an IP list for the client address',
    ).toBe(true);
    expect(symbols).toEqual(expect.arrayContaining(['R_SPF_NA', 'HFILTER_HELO_NORES_A_OR_MX']));
    expect(symbols, 'the reverse name was given').not.toContain('HFILTER_HOSTNAME_UNKNOWN');
    // rspamd's log of the task names the MTA's queue id (our transaction) and the client.
    expect(rspamd.log()).toMatch(/qid: <mta:q-spf-checked\.example>, ip: 203\.0\.113\.9/);
  });

  it("without them (or with Postfix's 'unknown') rspamd counts the message as local and skips those checks", async () => {
    const { entry, symbols, asked } = await handOff('unchecked.example', {
      'x-envelope-client-address': 'unknown',
      'x-envelope-client-hostname': 'unknown',
    });
    expect(entry).toMatchObject({ clientAddress: null, clientHelo: null, clientHostname: null });
    expect(asked).not.toContain('TXT unchecked.example');
    expect(symbols).not.toContain('R_SPF_NA');
    expect(symbols).toContain('HFILTER_HOSTNAME_UNKNOWN');
  });

  it('an IPv6 client address in brackets reaches rspamd bare', async () => {
    const { entry, asked } = await handOff('v6.example', { 'x-envelope-client-address': '[IPv6:2001:db8::25]' });
    expect(entry.clientAddress).toBe('2001:db8::25');
    expect(asked).toContain('TXT v6.example');
  });

  it('outgoing mail is scanned as the authenticated sender (User), not checked as a stranger', async () => {
    const raw = Buffer.from(message({ from: 'alice@example.test', to: 'carol@remote.example', subject: 'outgoing' }));
    const refused = await scanOutbound(w as unknown as SendDeps, raw, 'alice@example.test', [
      'carol@remote.example',
      'dave@remote.example',
    ]);
    expect(refused).toBeNull();
    const line = rspamd
      .log()
      .split('\n')
      .find((l) => l.includes('user: alice@example.test'));
    expect(line).toMatch(/user: alice@example\.test, from: <alice@example\.test>/);
    // Every recipient, one Rcpt header each (as rspamd's milter passes them).
    expect(line).toMatch(/rcpts: <carol@remote\.example,dave@remote\.example>/);
  });
});
