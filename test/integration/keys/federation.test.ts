import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSqlite } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import {
  createVault,
  decryptAndVerify,
  encryptEntity,
  masterKeyFromPassword,
  unlockWithMasterKey,
  type VaultView,
} from '../../../lib/keys/client/index.js';
import { discoveryHash, refuseDowngrade } from '../../../lib/keys/index.js';
import { TEST_ARGON2, keyTestValues, startTxtDns, type TxtDns } from './helpers.js';

// Spec: Finding the server from an address; key lookup and the well-known route; Discovered keys.
// Two servers find each other's keys through a real DNS server (UDP on 127.0.0.1): _svc TXT names a
// host, its A record an address on loopback that mail:security:outbound:allowed_ranges lets the
// servers connect to (they would refuse loopback otherwise), on the port of the url_template.

/** A port free on the given loopback address (the servers share it, each on its own address). */
async function freePortOn(host: string): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, host, r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('federated key lookup between two servers', () => {
  let a: TestApi;
  let b: TestApi;
  let dns: TxtDns;
  let port: number;
  let sa: Awaited<ReturnType<typeof seedUsers>>;
  let carolToken: string;
  let carolBox: { uid: string };
  let carolVault: VaultView;
  let fake: Server;

  beforeAll(async () => {
    dns = await startTxtDns();
    port = await freePortOn('127.0.0.2');
    const common = {
      'mail:dns:nameservers': [dns.server],
      'mail:keys:federation:url_template': `http://{host}:${port}`,
      'mail:dns:timeout_ms': 1000,
      'mail:keys:lookup_floor_ms': 100,
      'mail:security:outbound:allowed_ranges': ['127.0.0.2/32', '127.0.0.3/32', '127.0.0.4/32'],
    };
    const sqlite = { name: 'sqlite', open: async () => freshSqlite() };
    a = await startTestApi(sqlite, await keyTestValues(common), { listen: { host: '127.0.0.3', port } });
    b = await startTestApi(sqlite, await keyTestValues(common), { listen: { host: '127.0.0.2', port } });
    dns.hosts.set('mail.example.test', ['127.0.0.3']);
    dns.hosts.set('mail.other.test', ['127.0.0.2']);
    dns.txt.set('_svc.example.test', 'v=SVCv1; id=serverA01; host=mail.example.test;');
    dns.txt.set('_svc.other.test', 'v=SVCv1; id=serverB01; host=mail.other.test;');
    sa = await seedUsers(a);
    const adminB = await b.token({ uid: 'root', roles: ['admin'], elevated: true });
    carolToken = await b.token({ uid: 'carol' });
    await b.call('POST', '/api/mail/domains', { token: adminB, body: { name: 'other.test', verified: true } });
    carolBox = (await b.call('POST', '/api/mail/mailboxes', { token: adminB, body: { address: 'carol@other.test', owners: ['carol'] } }))
      .body;
    const va = await createVault(sa.aliceBox.uid, 'alice@example.test', 'pw-a', { argon2: TEST_ARGON2 });
    expect(
      (await a.call('POST', `/api/mail/mailboxes/${sa.aliceBox.uid}/keyvault/enroll`, { token: sa.alice, body: va.body })).status,
    ).toBe(201);
    const vc = await createVault(carolBox.uid, 'carol@other.test', 'pw-c', { argon2: TEST_ARGON2 });
    const r = await b.call('POST', `/api/mail/mailboxes/${carolBox.uid}/keyvault/enroll`, { token: carolToken, body: vc.body });
    expect(r.status).toBe(201);
    carolVault = r.body;
  });
  afterAll(async () => {
    dns?.close();
    fake?.close();
    await a?.close();
    await b?.close();
  });

  const lookupFromA = (addr: string) =>
    a.call('GET', `/api/mail/mailboxes/${sa.aliceBox.uid}/keys/lookup?addr=${encodeURIComponent(addr)}`, { token: sa.alice });

  it("each server finds the other's key through _svc TXT and /.well-known/svc/keys, pinned on first use", async () => {
    const r = await lookupFromA('Carol@other.test');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      address: 'carol@other.test',
      source: 'federated',
      remote: 'found',
      certificate: carolVault.encryptionCertificate,
    });
    expect(r.body.pin).toMatchObject({ state: 'pinned', firstUse: true });
    const back = await b.call('GET', `/api/mail/mailboxes/${carolBox.uid}/keys/lookup?addr=alice@example.test`, { token: carolToken });
    expect(back.status).toBe(200);
    expect(back.body.source).toBe('federated');
    // what was found encrypts a message carol opens
    const msg = await encryptEntity('Content-Type: text/plain\r\n\r\nhello carol\r\n', [r.body.certificate]);
    const keys = await unlockWithMasterKey(carolVault, await masterKeyFromPassword(carolVault, 'pw-c'));
    const opened = await decryptAndVerify(msg, { certPem: carolVault.encryptionCertificate!, key: keys.encryptionKey });
    expect(opened.entity).toContain('hello carol');
    const again = await lookupFromA('carol@other.test');
    expect(again.body.pin.firstUse).toBe(false);
  });

  it('a rekeyed remote key waits as a conflict; the pinned key is answered until accepted', async () => {
    const next = await createVault(carolBox.uid, 'carol@other.test', 'pw-c2', { current: 1, argon2: TEST_ARGON2 });
    const rk = await b.call('POST', `/api/mail/mailboxes/${carolBox.uid}/keyvault/rekey`, { token: carolToken, body: next.body });
    expect(rk.status).toBe(200);
    const r = await lookupFromA('carol@other.test');
    expect(r.body.certificate).toBe(carolVault.encryptionCertificate);
    expect(r.body.pin.state).toBe('conflict');
    expect(r.body.pin.pendingFingerprint).not.toBe(r.body.fingerprint);
    const list = await a.call('GET', `/api/mail/mailboxes/${sa.aliceBox.uid}/keys/discovered`, { token: sa.alice });
    expect(list.body).toHaveLength(1);
    expect(
      (await a.call('POST', `/api/mail/mailboxes/${sa.aliceBox.uid}/keys/discovered/${r.body.pin.uid}/accept`, { token: sa.bob })).status,
    ).toBe(404);
    const acc = await a.call('POST', `/api/mail/mailboxes/${sa.aliceBox.uid}/keys/discovered/${r.body.pin.uid}/accept`, {
      token: sa.alice,
    });
    expect(acc.status).toBe(200);
    const after = await lookupFromA('carol@other.test');
    expect(after.body.certificate).toBe(rk.body.encryptionCertificate);
    expect(after.body.pin.state).toBe('pinned');
    carolVault = rk.body;
  });

  it('a rejected key stays rejected', async () => {
    const next = await createVault(carolBox.uid, 'carol@other.test', 'pw-c3', { current: 2, argon2: TEST_ARGON2 });
    expect(
      (await b.call('POST', `/api/mail/mailboxes/${carolBox.uid}/keyvault/rekey`, { token: carolToken, body: next.body })).status,
    ).toBe(200);
    const r = await lookupFromA('carol@other.test');
    expect(r.body.pin.state).toBe('conflict');
    expect(
      (await a.call('POST', `/api/mail/mailboxes/${sa.aliceBox.uid}/keys/discovered/${r.body.pin.uid}/reject`, { token: sa.alice })).status,
    ).toBe(200);
    const again = await lookupFromA('carol@other.test');
    expect(again.body.pin.state).toBe('pinned');
    expect(again.body.certificate).toBe(carolVault.encryptionCertificate);
  });

  it('downgrade is refused while a key is pinned: the pinned key survives a vanished record, plaintext is refused', async () => {
    dns.txt.delete('_svc.other.test');
    const r = await lookupFromA('carol@other.test');
    expect(r.status).toBe(200);
    expect(r.body.remote).toBe('absent');
    expect(r.body.certificate).toBe(carolVault.encryptionCertificate);
    await expect(refuseDowngrade(a.deps, sa.aliceBox.uid, ['carol@other.test'], false)).rejects.toMatchObject({ code: 'api-121' });
    await expect(refuseDowngrade(a.deps, sa.aliceBox.uid, ['carol@other.test'], true)).resolves.toBeUndefined();
    await expect(refuseDowngrade(a.deps, sa.aliceBox.uid, ['dave@nowhere.test'], false)).resolves.toBeUndefined();
    dns.txt.set('_svc.other.test', 'v=SVCv1; id=serverB01; host=mail.other.test;');
  });

  it('a domain without the record has no key; an answer for another address is refused', async () => {
    expect((await lookupFromA('x@nowhere.test')).status).toBe(404);
    const cert = carolVault.encryptionCertificate!;
    fake = createServer((req, res) => {
      const u = new URL(req.url!, 'http://x');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ v: 'SVCv1', hash: u.pathname.split('/').pop(), domain: u.searchParams.get('domain'), certificate: cert }));
    });
    await new Promise<void>((r) => fake.listen(port, '127.0.0.4', r));
    dns.hosts.set('mail.evil.test', ['127.0.0.4']);
    dns.txt.set('_svc.evil.test', 'v=SVCv1; id=evil0001; host=mail.evil.test;');
    const r = await lookupFromA('mallory@evil.test');
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('api-113');
  });

  it('the well-known route: no sign-in, strict input, the same time whether or not the address exists', async () => {
    const known = discoveryHash('carol');
    const unknown = discoveryHash('nobody-here');
    const ok = await b.call('GET', `/.well-known/svc/keys/${known}?domain=other.test`, { token: null });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ v: 'SVCv1', hash: known, domain: 'other.test' });
    expect((await b.call('GET', `/.well-known/svc/keys/${unknown}?domain=other.test`)).status).toBe(404);
    expect((await b.call('GET', `/.well-known/svc/keys/not-a-hash?domain=other.test`)).status).toBe(400);
    expect((await b.call('GET', `/.well-known/svc/keys/${known}`)).status).toBe(400);
    const times: Record<'known' | 'unknown', number[]> = { known: [], unknown: [] };
    for (let i = 0; i < 25; i++) {
      for (const [k, h] of [
        ['known', known],
        ['unknown', unknown],
      ] as const) {
        const t = performance.now();
        await fetch(`${b.url}/.well-known/svc/keys/${h}?domain=other.test`).then((res) => res.arrayBuffer());
        times[k].push(performance.now() - t);
      }
    }
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const floor = b.config.get('mail:keys:lookup_floor_ms');
    expect(Math.min(...times.known)).toBeGreaterThanOrEqual(floor - 1);
    expect(Math.min(...times.unknown)).toBeGreaterThanOrEqual(floor - 1);
    // Medians within 20% of the floor of each other: existence does not show in the timing.
    expect(Math.abs(median(times.known) - median(times.unknown))).toBeLessThan(floor * 0.2 + 1);
  });
});
