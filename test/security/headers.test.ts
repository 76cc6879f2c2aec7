// docs/SECURITY.md, Transport security and browser headers: the headers a Mozilla Observatory scan
// reads, on every kind of answer of the real api and protocols apps (a page, an asset, the OpenAPI
// viewer, API answers, errors, downloads, the internal hand-off's refusal): Strict-Transport-Security
// (when the public URL is https, or the request came over TLS through a trusted proxy),
// X-Content-Type-Options, X-Frame-Options and frame-ancestors, Content-Security-Policy,
// Referrer-Policy, Cross-Origin-Resource-Policy and -Opener-Policy, Permissions-Policy, and no
// cookies. And the shipped nginx site sends HSTS with
// `always`, exactly once, on its own answers too (with a real nginx where one is installed).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProtocolsApp, type ProtocolsApp } from '../../daemons/protocols/app.js';
import type { SettingName } from '../../lib/config/index.js';
import { seedUsers, startTestApi, type TestApi } from '../helpers/api.js';
import { sqlBackends } from '../helpers/databases.js';
import { deliverRaw } from '../helpers/messages.js';
import { programPath, requirePrograms } from '../helpers/peers.js';
import { SITE, startShippedNginx, type ShippedNginx } from '../helpers/nginx.js';

const [sqlite] = await sqlBackends();
const HALF_YEAR = 15_768_000; // Observatory's minimum max-age
const NGINX = requirePrograms('nginx', 'openssl') ? programPath('nginx') : undefined;

const MAIL = `From: bob@example.test\r\nTo: alice@example.test\r\nSubject: with attachment\r\nMessage-ID: <hdr@example.test>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--b\r\nContent-Type: application/pdf; name="r.pdf"\r\nContent-Disposition: attachment; filename="r.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from('%PDF-1.4').toString('base64')}\r\n--b--\r\n`;

interface Scanned {
  what: string;
  status: number;
  headers: Headers;
}

/** What an Observatory scan asks of one answer; the list of what is missing. */
function observatory({ what, headers: h }: Scanned, opts: { hsts: boolean }): string[] {
  const miss: string[] = [];
  const sts = h.get('strict-transport-security');
  if (opts.hsts) {
    const age = Number(/max-age=(\d+)/.exec(sts ?? '')?.[1] ?? 0);
    if (age < HALF_YEAR) miss.push(`${what}: Strict-Transport-Security ${sts}`);
  } else if (sts !== null) miss.push(`${what}: Strict-Transport-Security over plain HTTP: ${sts}`);
  if (h.get('x-content-type-options') !== 'nosniff') miss.push(`${what}: X-Content-Type-Options`);
  const csp = h.get('content-security-policy') ?? '';
  if (!csp) miss.push(`${what}: Content-Security-Policy`);
  if (h.get('x-frame-options') !== 'DENY' && !/frame-ancestors 'none'/.test(csp)) miss.push(`${what}: framing allowed`);
  if (/script-src[^;]*'unsafe-(inline|eval)'/.test(csp) || (/default-src[^;]*'unsafe-inline'/.test(csp) && !/script-src/.test(csp)))
    miss.push(`${what}: CSP allows inline scripts`);
  if (!/^(no-referrer|same-origin|strict-origin|strict-origin-when-cross-origin)$/.test(h.get('referrer-policy') ?? ''))
    miss.push(`${what}: Referrer-Policy`);
  if (!/^(same-origin|same-site)$/.test(h.get('cross-origin-resource-policy') ?? '')) miss.push(`${what}: Cross-Origin-Resource-Policy`);
  if (h.get('cross-origin-opener-policy') !== 'same-origin') miss.push(`${what}: Cross-Origin-Opener-Policy`);
  if (!/camera=\(\)/.test(h.get('permissions-policy') ?? '')) miss.push(`${what}: Permissions-Policy`);
  if (h.get('set-cookie') !== null) miss.push(`${what}: sets a cookie`);
  if (h.get('x-powered-by') !== null) miss.push(`${what}: X-Powered-By`);
  return miss;
}

describe('security headers of the api and protocols daemons (public URL https)', () => {
  let api: TestApi;
  let proto: ProtocolsApp;
  let protoServer: Server;
  let protoUrl: string;
  let users: Awaited<ReturnType<typeof seedUsers>>;
  let messageUid: string;
  beforeAll(async () => {
    api = await startTestApi(sqlite, {
      'mail:base_url': 'https://mail.example.test',
      'mail:transport:ingest:secret': 'ingest-secret-0123456789abcdef',
    });
    users = await seedUsers(api);
    messageUid = (await deliverRaw(api, users.aliceBox.uid, MAIL)).uid;
    proto = buildProtocolsApp(api.deps);
    await proto.host.start();
    protoServer = createServer(proto.app);
    await new Promise<void>((r) => protoServer.listen(0, '127.0.0.1', r));
    protoUrl = `http://127.0.0.1:${(protoServer.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    protoServer?.closeAllConnections();
    await new Promise<void>((r) => (protoServer ? protoServer.close(() => r()) : r()));
    await proto?.host.stop();
    await proto?.limits.close();
    await api?.close();
  });

  const scan = async (what: string, url: string, init: RequestInit = {}): Promise<Scanned> => {
    const r = await fetch(url, init);
    await r.arrayBuffer();
    return { what, status: r.status, headers: r.headers };
  };
  const auth = () => ({ headers: { authorization: `Bearer ${users.alice}` } });

  it('every kind of answer carries HSTS and the Observatory headers', async () => {
    const answers = [
      await scan('page /', `${api.url}/`),
      await scan('page /settings', `${api.url}/settings`),
      await scan('asset', `${api.url}${/src="(\/assets\/mail-[\w-]+\.js)"/.exec(await (await fetch(`${api.url}/`)).text())![1]}`),
      await scan('OpenAPI viewer', `${api.url}/api/openapi`, auth()),
      await scan('status', `${api.url}/api/status`),
      await scan('API list', `${api.url}/api/mail/folders?mailboxUid=${users.aliceBox.uid}`, auth()),
      await scan('API record', `${api.url}/api/mail/messages/${messageUid}`, auth()),
      await scan('error 401', `${api.url}/api/mail/folders`),
      await scan('error 404', `${api.url}/api/mail/nothing-here`, auth()),
      await scan('error 400', `${api.url}/api/mail/folders`, {
        method: 'POST',
        headers: { ...auth().headers, 'content-type': 'application/json' },
        body: '{"name":',
      }),
      await scan('hand-off refusal 403', `${api.url}/internal/mta/domain?name=example.test`, {
        headers: { authorization: 'Bearer wrong' },
      }),
      await scan('download raw', `${api.url}/api/mail/messages/${messageUid}/raw`, auth()),
      await scan('download attachment', `${api.url}/api/mail/messages/${messageUid}/attachments/1`, auth()),
      await scan('protocols status', `${protoUrl}/protocols/status`),
      await scan('protocols 404', `${protoUrl}/nothing-here`),
    ];
    expect(answers.map((a) => `${a.what} ${a.status}`)).toEqual([
      'page / 200',
      'page /settings 200',
      'asset 200',
      'OpenAPI viewer 200',
      'status 200',
      'API list 200',
      'API record 200',
      'error 401 401',
      'error 404 404',
      'error 400 400',
      'hand-off refusal 403 403',
      'download raw 200',
      'download attachment 200',
      'protocols status 200',
      'protocols 404 404',
    ]);
    expect(answers.flatMap((a) => observatory(a, { hsts: true }))).toEqual([]);
    // Answers with no policy of their own get one that allows nothing; pages and downloads keep theirs.
    const csp = (what: string) => answers.find((a) => a.what === what)!.headers.get('content-security-policy');
    expect(csp('API list')).toBe("default-src 'none';frame-ancestors 'none';base-uri 'none';form-action 'none'");
    expect(csp('page /')).toMatch(/^default-src 'self'; script-src 'self'; style-src 'self' 'nonce-/);
    expect(csp('download attachment')).toBe("default-src 'none'; sandbox");
  });
});

describe('when HSTS is sent', () => {
  const hstsOf = async (values: Partial<Record<SettingName, unknown>>, headers: Record<string, string> = {}) => {
    const api = await startTestApi(sqlite, values);
    try {
      const r = await fetch(`${api.url}/api/status`, { headers });
      await r.arrayBuffer();
      return r.headers.get('strict-transport-security');
    } finally {
      await api.close();
    }
  };

  it('public URL https: always; http: never; else only over TLS through a trusted proxy; 0 turns it off', async () => {
    expect(await hstsOf({ 'mail:base_url': 'https://mail.example.test' })).toBe('max-age=31536000');
    expect(await hstsOf({ 'mail:base_url': '', 'mail:host': 'mail.example.test' })).toBe('max-age=31536000');
    expect(await hstsOf({ 'mail:base_url': 'https://mail.example.test', 'mail:security:hsts_max_age_seconds': 20_000_000 })).toBe(
      'max-age=20000000',
    );
    expect(await hstsOf({ 'mail:base_url': 'http://localhost:8080' }, { 'x-forwarded-proto': 'https' })).toBeNull();
    expect(await hstsOf({ 'mail:base_url': 'https://mail.example.test', 'mail:security:hsts_max_age_seconds': 0 })).toBeNull();
    // No public URL known (development): the request decides, and X-Forwarded-Proto counts only from trusted_proxies.
    expect(await hstsOf({})).toBeNull();
    expect(await hstsOf({}, { 'x-forwarded-proto': 'https' })).toBeNull();
    expect(await hstsOf({ trusted_proxies: ['loopback'] }, { 'x-forwarded-proto': 'https' })).toBe('max-age=31536000');
    expect(await hstsOf({ trusted_proxies: ['loopback'] }, { 'x-forwarded-proto': 'http' })).toBeNull();
  });
});

/** The TLS server block of the shipped site file, its locations and its own directives. */
function tlsServerBlock(site: string): string {
  const blocks = site.split(/\nserver \{/).slice(1);
  const tls = blocks.find((b) => /listen 443 ssl/.test(b));
  if (!tls) throw new Error('no TLS server block in the site file');
  return tls;
}

describe('the shipped nginx site', () => {
  it("sends HSTS with always on the TLS server, hides the daemons' own, and no location drops it", () => {
    const tls = tlsServerBlock(readFileSync(SITE, 'utf8'));
    const add = /^\s*add_header\s+Strict-Transport-Security\s+"max-age=(\d+)[^"]*"\s+always;/m.exec(tls);
    expect(add, 'add_header Strict-Transport-Security ... always;').not.toBeNull();
    expect(Number(add![1])).toBeGreaterThanOrEqual(HALF_YEAR);
    expect(tls).toMatch(/^\s*proxy_hide_header\s+Strict-Transport-Security;/m);
    // nginx inherits add_header into a location only when the location has none of its own.
    const locations = tls.split(/\n\s*location\s/).slice(1);
    expect(locations.length).toBeGreaterThan(3);
    expect(locations.filter((l) => /add_header/.test(l.slice(0, l.indexOf('}'))))).toEqual([]);
  });

  describe.runIf(NGINX)('with a real nginx', () => {
    let api: TestApi;
    let nginx: ShippedNginx | undefined;
    let dir: string;
    let port: number;
    const get = (path: string) =>
      new Promise<{ status: number; hsts: string[] }>((resolve, reject) => {
        const req = httpsRequest(
          { host: '127.0.0.1', port, path, rejectUnauthorized: false, headers: { host: 'mail.example.org' } },
          (res) => {
            res.resume();
            res.on('end', () => {
              // Raw headers: every copy of the header, not Node's first-one-wins view.
              const values: string[] = [];
              for (let i = 0; i < res.rawHeaders.length; i += 2)
                if (/^strict-transport-security$/i.test(res.rawHeaders[i])) values.push(res.rawHeaders[i + 1]);
              resolve({ status: res.statusCode!, hsts: values });
            });
          },
        );
        req.on('error', reject);
        req.end();
      });

    beforeAll(async () => {
      // The daemon sends its own HSTS too (public URL https): nginx must hide it and send one.
      api = await startTestApi(sqlite, { 'mail:base_url': 'https://mail.example.org' });
      dir = mkdtempSync(join(tmpdir(), 'svcmail-nginx-hsts-'));
      nginx = await startShippedNginx(NGINX!, dir, { '127.0.0.1:8080': new URL(api.url).host });
      port = nginx.port;
    }, 60_000);
    afterAll(async () => {
      nginx?.stop();
      await api?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("one HSTS header on proxied answers, errors and nginx's own refusals", async () => {
      const seen = [await get('/api/status'), await get('/'), await get('/api/mail/folders'), await get('/internal/mta/deliver')];
      expect(seen.map((s) => s.status)).toEqual([200, 200, 401, 403]);
      for (const s of seen) expect(s.hsts).toEqual(['max-age=31536000']);
    });
  });
});
