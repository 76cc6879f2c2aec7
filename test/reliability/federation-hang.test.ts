// Reliability, fault injection, for the key lookup route (docs/SECURITY.md, Server-side request
// forgery): the other server's DNS that never answers, a federation peer that accepts and never
// answers, and one that drips its answer forever. The route answers 503 api-113 within its time
// limits (mail:dns:timeout_ms, mail:keys:federation:timeout_ms), says nothing of the peer's
// address, and a key pinned before stays in use (Spec: Discovered keys).
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscoveredKeyModel } from '../../lib/keys/index.js';
import type { DiscoveredKey } from '../../lib/keys/models.js';
import { freshSqlite } from '../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../helpers/api.js';
import { keyTestValues, startTxtDns, type TxtDns } from '../integration/keys/helpers.js';

const DNS_TIMEOUT = 400;
const PEER_TIMEOUT = 800;
const SLACK_MS = 3000;

/** On 127.0.0.2: 'silent' reads and never answers; 'drip' answers headers, then a byte a second. */
async function badPeer(mode: 'silent' | 'drip', port = 0): Promise<{ server: Server; port: number; open: number }> {
  const sockets = new Set<Socket>();
  const peer = {
    server: createServer((s) => {
      sockets.add(s);
      peer.open++;
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        peer.open--;
      });
      if (mode === 'silent') return void s.on('data', () => undefined);
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{');
        const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write(' ')), 1000);
      });
    }),
    port: 0,
    open: 0,
  };
  peer.server.on('close', () => {
    for (const s of sockets) s.destroy();
  });
  await new Promise<void>((r) => peer.server.listen(port, '127.0.0.2', r));
  peer.port = (peer.server.address() as { port: number }).port;
  return peer;
}

describe('key lookup with a hanging DNS or federation peer', () => {
  let dns: TxtDns;
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  let silent: Awaited<ReturnType<typeof badPeer>>;
  let drip: Awaited<ReturnType<typeof badPeer>>;

  beforeAll(async () => {
    dns = await startTxtDns();
    silent = await badPeer('silent');
    api = await startTestApi(
      { name: 'sqlite', open: async () => freshSqlite() },
      await keyTestValues({
        'mail:dns:nameservers': [dns.server],
        'mail:dns:timeout_ms': DNS_TIMEOUT,
        'mail:keys:federation:timeout_ms': PEER_TIMEOUT,
        'mail:keys:federation:url_template': `http://{host}:${silent.port}`,
        'mail:security:outbound:allowed_ranges': ['127.0.0.2/32'],
      }),
    );
    people = await seedUsers(api);
  });
  afterAll(async () => {
    dns?.close();
    if (silent?.server.listening) silent.server.close();
    drip?.server.close();
    await api?.close();
  });

  const lookup = async (addr: string) => {
    const t0 = Date.now();
    const r = await api.call('GET', `/api/mail/mailboxes/${people.aliceBox.uid}/keys/lookup?addr=${encodeURIComponent(addr)}`, {
      token: people.alice,
    });
    return { ...r, ms: Date.now() - t0 };
  };
  const expectUnavailable = (r: Awaited<ReturnType<typeof lookup>>, limitMs: number) => {
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(r.body).toMatchObject({ code: 'api-113', status: 503 });
    expect(JSON.stringify(r.body)).not.toMatch(/127\.0\.0\.2|ECONN|timeout|abort/i);
    expect(r.ms).toBeLessThan(limitMs + SLACK_MS);
  };

  it('a DNS server that never answers: 503 within the resolver time limit', async () => {
    dns.silent.add('_svc.quiet.test');
    expectUnavailable(await lookup('x@quiet.test'), DNS_TIMEOUT * 2);
  });

  it('a peer that accepts and never answers: 503 within mail:keys:federation:timeout_ms, and the socket is closed', async () => {
    dns.hosts.set('mail.silent.test', ['127.0.0.2']);
    dns.txt.set('_svc.silent.test', 'v=SVCv1; id=s; host=mail.silent.test;');
    expectUnavailable(await lookup('x@silent.test'), PEER_TIMEOUT);
    await expect.poll(() => silent.open, { timeout: 5000 }).toBe(0);
  });

  it('a peer that drips its answer forever: the time limit covers the body too', async () => {
    // the url_template's port is one for all peers: the dripping one takes the silent one's place
    await new Promise<void>((r) => silent.server.close(() => r()));
    drip = await badPeer('drip', silent.port);
    dns.hosts.set('mail.drip.test', ['127.0.0.2']);
    dns.txt.set('_svc.drip.test', 'v=SVCv1; id=d; host=mail.drip.test;');
    expectUnavailable(await lookup('x@drip.test'), PEER_TIMEOUT);
    await expect.poll(() => drip.open, { timeout: 5000 }).toBe(0);
  });

  it('a key pinned before stays in use while the peer hangs (remote: unreachable)', async () => {
    const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    await api.deps.store.repo<DiscoveredKey>(DiscoveredKeyModel).create({
      mailboxUid: people.aliceBox.uid,
      address: 'x@drip.test',
      certificate: cert,
      fingerprint: 'ab'.repeat(32),
      state: 'pinned',
      source: 'federated',
      rejected: [],
    });
    const r = await lookup('x@drip.test');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ source: 'federated', remote: 'unreachable', certificate: cert });
    expect(r.ms).toBeLessThan(PEER_TIMEOUT + SLACK_MS);
  });
});
