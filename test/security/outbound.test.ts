import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/index.js';
import { checkedRequest, outboundPolicy, OutboundRefused } from '../../lib/http/index.js';
import { AcmeClient, parseSvcRecord } from '../../lib/keys/index.js';
import { freshSqlite } from '../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../helpers/api.js';
import { requirePrograms } from '../helpers/peers.js';
import { keyTestValues, startTxtDns, type TxtDns } from '../integration/keys/helpers.js';

// docs/SECURITY.md, Server-side request forgery — through key lookup, and its siblings. Every
// connection the server makes because a user or a remote party named the target is checked where it
// is made (lib/http/outbound.ts): resolved once through the configured resolver, loopback, private,
// link-local, unique-local, multicast, unspecified and IPv4-mapped forms refused, the checked address
// connected to, redirects refused, answers capped. A TCP trap on loopback proves no connection is made;
// a DNS server on loopback answers the attacker's records. Only loopback addresses are ever connected
// to here; the other ranges are checked by the classifier alone (no packet leaves the machine).

const withOpenssl = requirePrograms('openssl');

const sqlite = { name: 'sqlite', open: async () => freshSqlite() };

/** A TCP listener that only counts who connects (and closes them). */
interface Trap {
  server: TcpServer;
  hits: number;
}
async function trap(host: string, port = 0): Promise<Trap> {
  const t: Trap = {
    server: createTcpServer((s) => {
      t.hits++;
      s.destroy();
    }),
    hits: 0,
  };
  await new Promise<void>((r) => t.server.listen(port, host, r));
  return t;
}
const portOf = (s: { address(): unknown }) => (s.address() as AddressInfo).port;

describe('which addresses the server connects to for others', () => {
  const config = loadConfig({ env: { NODE_ENV: 'test' }, values: {} });
  const policy = outboundPolicy(config);

  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '::1',
    '0.0.0.0',
    '::',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    '224.0.0.1',
    'ff02::1',
    '255.255.255.255',
    '192.0.2.1',
    '198.18.0.1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '64:ff9b::a00:1',
    '2002:a00:1::1',
    '2001::1',
    // IPv4-compatible (::a.b.c.d, deprecated): never a public destination, loopback or not.
    '::7f00:1',
    '::a00:1',
    '::808:808',
  ])('%s is refused', (address) => {
    expect(policy.refusal(address)).toMatch(/address$/);
  });

  it.each(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '::ffff:8.8.8.8'])('public unicast %s is allowed', (address) => {
    expect(policy.refusal(address)).toBeNull();
  });

  it('mail:security:outbound:allowed_ranges lets a closed network allow internal ranges, and no more', () => {
    const closed = outboundPolicy(
      loadConfig({ env: { NODE_ENV: 'test' }, values: { 'mail:security:outbound:allowed_ranges': ['10.20.0.0/16', 'fd00:1::/48'] } }),
    );
    expect(closed.refusal('10.20.3.4')).toBeNull();
    expect(closed.refusal('::ffff:10.20.3.4')).toBeNull();
    expect(closed.refusal('fd00:1::5')).toBeNull();
    expect(closed.refusal('10.21.0.1')).toMatch(/private/);
    expect(closed.refusal('127.0.0.1')).toMatch(/loopback/);
    expect(() => loadConfig({ env: { NODE_ENV: 'test' }, values: { 'mail:security:outbound:allowed_ranges': ['10.20.0.0'] } })).toThrow(
      /allowed_ranges.*CIDR/,
    );
  });

  it('a _svc record names a host: IP literals, ports and single-label names are not records', () => {
    expect(parseSvcRecord('v=SVCv1; id=x; host=mail.example.net;')).toEqual({ id: 'x', host: 'mail.example.net' });
    for (const host of [
      '127.0.0.1:8443',
      '127.0.0.1',
      'localhost:443',
      'localhost',
      'mail.example.net:8443',
      '[::1]',
      '::1',
      '2130706433',
      '0x7f.1',
      '10.0.0.1.',
    ]) {
      expect(parseSvcRecord(`v=SVCv1; id=x; host=${host};`), host).toBeNull();
    }
  });
});

describe('a host with several checked addresses', () => {
  // A closed network that allows two loopback addresses; the name's first address takes no connection.
  const config = loadConfig({ env: { NODE_ENV: 'test' }, values: { 'mail:security:outbound:allowed_ranges': ['127.0.0.60/30'] } });
  let server: HttpServer;
  let port = 0;
  const seen: string[] = [];
  beforeAll(async () => {
    server = createHttpServer((req, res) => {
      seen.push(req.socket.localAddress ?? '');
      res.end('here');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.62', r));
    port = portOf(server);
  });
  afterAll(() => server?.close());
  const request = (addresses: string[]) =>
    checkedRequest(`http://multi.example.test:${port}/`, { config, resolve: async () => addresses, timeoutMs: 5000, maxBytes: 1024 });

  it('tries the next address when one refuses the connection', async () => {
    const r = await request(['127.0.0.61', '127.0.0.62']);
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('here');
    expect(seen.at(-1)).toBe('127.0.0.62');
  });

  it('answers the last refusal when no address takes the connection', async () => {
    await expect(request(['127.0.0.61', '127.0.0.63'])).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('checks every address before connecting to any: one outside the allowed ranges refuses the host', async () => {
    const before = seen.length;
    await expect(request(['127.0.0.62', '127.0.0.1'])).rejects.toBeInstanceOf(OutboundRefused);
    expect(seen.length).toBe(before);
  });
});

describe('federated key lookup does not reach internal addresses', () => {
  let dns: TxtDns;
  let api: TestApi;
  let closed: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  let closedPeople: Awaited<ReturnType<typeof seedUsers>>;
  let trap4: Trap;
  let trap6: Trap | null;
  let peer: HttpServer;
  const peerRequests: { host: string; url: string }[] = [];
  let peerClosedEarly = 0;

  beforeAll(async () => {
    dns = await startTxtDns();
    trap4 = await trap('127.0.0.1');
    const port = portOf(trap4.server);
    trap6 = await trap('::1', port).catch(() => null); // a host without IPv6 loopback tests IPv4 only
    // The closed network's peer: on 127.0.0.2 (allowed there), the same port as the trap on 127.0.0.1.
    peer = createHttpServer((req, res) => {
      peerRequests.push({ host: req.headers.host ?? '', url: req.url ?? '' });
      const domain = new URL(req.url ?? '/', 'http://x').searchParams.get('domain');
      if (domain === 'redirect.attacker.test') return res.writeHead(302, { location: `http://127.0.0.1:${port}/` }).end();
      if (domain === 'big.attacker.test') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.on('close', () => {
          if (!res.writableFinished) peerClosedEarly++;
        });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        let left = 160; // 10 MiB, written as the client reads
        const more = () => {
          while (left > 0) {
            left--;
            if (!res.write(chunk)) return void res.once('drain', more);
          }
          res.end();
        };
        return more();
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((r) => peer.listen(port, '127.0.0.2', r));
    const common = {
      'mail:dns:nameservers': [dns.server],
      'mail:dns:timeout_ms': 1000,
      'mail:keys:federation:url_template': `http://{host}:${port}`,
      'mail:keys:federation:max_response_bytes': 65_536,
    };
    api = await startTestApi(sqlite, await keyTestValues(common));
    closed = await startTestApi(sqlite, await keyTestValues({ ...common, 'mail:security:outbound:allowed_ranges': ['127.0.0.2/32'] }));
    people = await seedUsers(api);
    closedPeople = await seedUsers(closed);
  });
  afterAll(async () => {
    dns?.close();
    trap4?.server.close();
    trap6?.server.close();
    peer?.close();
    await api?.close();
    await closed?.close();
  });

  const lookup = (on: TestApi, who: typeof people, addr: string) =>
    on.call('GET', `/api/mail/mailboxes/${who.aliceBox.uid}/keys/lookup?addr=${encodeURIComponent(addr)}`, { token: who.alice });
  const noTrapHit = () => {
    expect(trap4.hits).toBe(0);
    expect(trap6?.hits ?? 0).toBe(0);
  };

  it('a record naming an IP literal with a port, or localhost with a port, is no record: 404 and no connection', async () => {
    const port = portOf(trap4.server);
    dns.txt.set('_svc.literal.attacker.test', `v=SVCv1; id=x; host=127.0.0.1:${port};`);
    dns.txt.set('_svc.local.attacker.test', `v=SVCv1; id=x; host=localhost:${port};`);
    dns.txt.set('_svc.v6.attacker.test', `v=SVCv1; id=x; host=[::1]:${port};`);
    for (const d of ['literal', 'local', 'v6']) {
      const r = await lookup(api, people, `x@${d}.attacker.test`);
      expect(r.status, d).toBe(404);
      expect(r.body).toMatchObject({ status: 404 });
    }
    noTrapHit();
  });

  it.each([
    ['loopback', ['127.0.0.1']],
    ['IPv6 loopback', ['::1']],
    ['IPv4-mapped loopback', ['::ffff:127.0.0.1']],
    ['the unspecified address', ['0.0.0.0']],
  ])('a host resolving to %s is refused: 503 api-113, no connection, nothing internal in the answer', async (_what, addresses) => {
    const host = `h${Math.random().toString(36).slice(2, 8)}.attacker.test`;
    dns.hosts.set(host, addresses);
    dns.txt.set(`_svc.${host}`, `v=SVCv1; id=x; host=${host};`);
    const r = await lookup(api, people, `x@${host}`);
    expect(r.status).toBe(503);
    expect(r.body.code).toBe('api-113');
    expect(JSON.stringify(r.body)).not.toMatch(/127\.0\.0\.1|::1|loopback|refused/);
    expect(dns.asked(host, 'A')).toBe(1);
    noTrapHit();
  });

  it('allowed_ranges: the address that was checked is the one connected to (DNS asked once; a rebinding answer is never used)', async () => {
    let answers = 0;
    dns.hosts.set('rebind.attacker.test', () => (answers++ === 0 ? ['127.0.0.2'] : ['127.0.0.1']));
    dns.txt.set('_svc.rebind.attacker.test', 'v=SVCv1; id=x; host=rebind.attacker.test;');
    const before = peerRequests.length;
    const r = await lookup(closed, closedPeople, 'x@rebind.attacker.test');
    expect(r.status, JSON.stringify(r.body)).toBe(404); // the peer has no key
    expect(peerRequests.length).toBe(before + 1);
    expect(peerRequests.at(-1)!.host).toBe(`rebind.attacker.test:${portOf(trap4.server)}`);
    expect(dns.asked('rebind.attacker.test', 'A')).toBe(1);
    noTrapHit();
  });

  it('allowed_ranges does not let a mixed answer through: one internal address outside the list refuses the host', async () => {
    dns.hosts.set('mixed.attacker.test', ['127.0.0.2', '127.0.0.1']);
    dns.txt.set('_svc.mixed.attacker.test', 'v=SVCv1; id=x; host=mixed.attacker.test;');
    const before = peerRequests.length;
    expect((await lookup(closed, closedPeople, 'x@mixed.attacker.test')).status).toBe(503);
    expect(peerRequests.length).toBe(before);
    noTrapHit();
  });

  it('a redirect is not followed', async () => {
    dns.hosts.set('redirect.attacker.test', ['127.0.0.2']);
    dns.txt.set('_svc.redirect.attacker.test', 'v=SVCv1; id=x; host=redirect.attacker.test;');
    const r = await lookup(closed, closedPeople, 'x@redirect.attacker.test');
    expect(r.status).toBe(503);
    noTrapHit();
  });

  it('an answer larger than mail:keys:federation:max_response_bytes is cut off, not read whole', async () => {
    dns.hosts.set('big.attacker.test', ['127.0.0.2']);
    dns.txt.set('_svc.big.attacker.test', 'v=SVCv1; id=x; host=big.attacker.test;');
    const r = await lookup(closed, closedPeople, 'x@big.attacker.test');
    expect(r.status).toBe(503);
    await expect.poll(() => peerClosedEarly).toBe(1);
  });
});

describe.runIf(withOpenssl)('checkedRequest over https', () => {
  let dir: string;
  let server: ReturnType<typeof createHttpsServer>;
  let ca: Buffer;
  const names: (string | false)[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-outbound-'));
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    ssl('req', '-x509', ...ec, '-days', '1', '-subj', '/CN=svcmail test CA', '-keyout', 'ca.key', '-out', 'ca.pem');
    ssl('req', '-new', ...ec, '-subj', '/CN=secure.peer.test', '-keyout', 'key.pem', '-out', 'leaf.csr');
    writeFileSync(join(dir, 'leaf.ext'), 'subjectAltName=DNS:secure.peer.test\n');
    ssl(
      'x509',
      '-req',
      '-in',
      'leaf.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      'leaf.ext',
      '-out',
      'cert.pem',
    );
    ca = readFileSync(join(dir, 'ca.pem'));
    server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) =>
      res.end(`hello ${req.headers.host}`),
    );
    server.on('secureConnection', (s) => names.push((s as unknown as { servername: string | false }).servername));
    await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
  });
  afterAll(() => {
    server?.close();
  });

  const config = loadConfig({ env: { NODE_ENV: 'test' }, values: { 'mail:security:outbound:allowed_ranges': ['127.0.0.2/32'] } });
  const opts = () => ({ config, timeoutMs: 5000, maxBytes: 1024, ca });

  it('connects to the checked address and verifies the certificate by the name (SNI), not the address', async () => {
    const r = await checkedRequest(`https://secure.peer.test:${portOf(server)}/x`, { ...opts(), resolve: async () => ['127.0.0.2'] });
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe(`hello secure.peer.test:${portOf(server)}`);
    expect(names.at(-1)).toBe('secure.peer.test');
  });

  it('a certificate for another name is refused', async () => {
    await expect(
      checkedRequest(`https://other.peer.test:${portOf(server)}/x`, { ...opts(), resolve: async () => ['127.0.0.2'] }),
    ).rejects.toThrow(/other\.peer\.test|altnames/i);
  });

  it('a URL that is not http or https, or a name without addresses, is refused before any connection', async () => {
    await expect(checkedRequest('file:///etc/passwd', { ...opts(), resolve: async () => ['127.0.0.2'] })).rejects.toBeInstanceOf(
      OutboundRefused,
    );
    await expect(checkedRequest('https://nothing.peer.test/', { ...opts(), resolve: async () => [] })).rejects.toThrow(/no address/);
  });
});

describe('ACME: URLs the CA hands back', () => {
  let directory: HttpServer;
  let t: Trap;
  beforeAll(async () => {
    t = await trap('127.0.0.1');
    directory = createHttpServer((req, res) => {
      const here = `http://127.0.0.1:${portOf(directory)}`;
      if (req.url === '/directory')
        return res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            newNonce: `http://127.0.0.1:${portOf(t.server)}/nonce`,
            newAccount: `${here}/acct`,
            newOrder: `${here}/order`,
          }),
        );
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => directory.listen(0, '127.0.0.1', r));
  });
  afterAll(() => {
    directory?.close();
    t?.server.close();
  });

  it('a URL on another origin than the configured directory passes the outbound check: an internal one is never connected to', async () => {
    const config = loadConfig({ env: { NODE_ENV: 'test' }, values: {} });
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const client = new AcmeClient(`http://127.0.0.1:${portOf(directory)}/directory`, key, '', config);
    await expect(client.account()).rejects.toThrow(/loopback/);
    const bare = new AcmeClient(`http://127.0.0.1:${portOf(directory)}/directory`, key);
    await expect(bare.account()).rejects.toBeInstanceOf(OutboundRefused);
    expect(t.hits).toBe(0);
  });
});
