// The api daemon's front door without nginx: the protocol paths are streamed to the protocols
// daemon (listen:protocols) and back; 502 api-122 when it is down; the client address goes along.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProtocolPath } from '../../../daemons/api/front-door.js';
import { autodiscoverPlugin } from '../../../lib/plugins/index.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { freePort, request, startStack, type Stack } from './_stack.js';
import { testEas, testMapi } from './_plugins.js';
import { adRequest } from './_xml.js';

const [sqlite] = await sqlBackends();

describe('which paths go to the protocols daemon', () => {
  it.each([
    ['/Vendor-Server-ActiveSync', true],
    ['/vendor-server-activesync', true],
    ['/Vendor-Server-ActiveSync/x', true],
    ['/mapi', true],
    ['/mapi/emsmdb', true],
    ['/MAPI/nspi/', true],
    ['/autodiscover/autodiscover.xml', true],
    ['/Autodiscover/Autodiscover.xml', true],
    ['/autodiscover', false],
    ['/mapix', false],
    ['/Vendor-Server-ActiveSyncX', false],
    ['/api/mail/mapi', false],
    ['/push', false],
    ['/', false],
  ])('%s → %s', (path, forwarded) => expect(isProtocolPath(path)).toBe(forwarded));
});

describe('front door (SQLite)', () => {
  let stack: Stack;
  beforeAll(async () => {
    // The api believes X-Forwarded-For from loopback here, as it would behind a local load balancer.
    stack = await startStack(sqlite, {
      values: { 'mail:autodiscover:public_url': 'https://mail.example.test', trusted_proxies: ['loopback'] },
      plugins: [autodiscoverPlugin, testEas, testMapi],
    });
  }, 60_000);
  afterAll(async () => stack?.close());

  it("Autodiscover through the api port is the protocols daemon's answer, byte for byte", async () => {
    const body = adRequest('alice@example.test');
    const direct = await request(`${stack.protocols}/autodiscover/autodiscover.xml`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'text/xml' },
    });
    const via = await request(`${stack.api}/autodiscover/autodiscover.xml`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'text/xml' },
    });
    expect(via.status).toBe(200);
    expect(via.text).toBe(direct.text);
    expect(via.headers.get('content-type')).toBe(direct.headers.get('content-type'));
    const json = await request(`${stack.api}/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=ActiveSync`);
    expect(json.json).toEqual({ Protocol: 'ActiveSync', Url: 'https://mail.example.test/Vendor-Server-ActiveSync' });
    // Errors come back as the protocols daemon wrote them.
    const big = await request(`${stack.api}/autodiscover/autodiscover.xml`, { method: 'POST', body: Buffer.alloc(16 * 1024 + 1, 0x20) });
    expect(big.status).toBe(413);
    expect(big.json).toMatchObject({ code: 'api-110' });
  });

  it('streams large and chunked bodies, keeps the query and every answer header, and carries the client address', async () => {
    const payload = Buffer.alloc(3 * 1024 * 1024, 0x61);
    const r = await request(`${stack.api}/mapi/emsmdb?MailboxId=alice%40example.test`, {
      method: 'POST',
      body: payload,
      headers: { 'content-type': 'application/mapi-http', 'x-forwarded-for': '203.0.113.9' },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({
      bytes: payload.length,
      query: { MailboxId: 'alice@example.test' },
      type: 'application/mapi-http',
      proto: 'http',
    });
    expect(r.headers.get('set-cookie')).toBe('MapiContext=abc; Path=/mapi');
    expect(r.headers.get('x-seen-ip')).toBe('203.0.113.9');
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new Uint8Array(1000));
        c.enqueue(new Uint8Array(24));
        c.close();
      },
    });
    const chunked = await fetch(`${stack.api}/mapi/emsmdb`, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    expect(await chunked.json()).toMatchObject({ bytes: 1024 });
  });

  it('other paths stay with the api daemon', async () => {
    expect((await request(`${stack.api}/api/status`)).json).toMatchObject({ status: 'ok' });
    expect((await request(`${stack.api}/protocols/status`)).status).toBe(404);
  });
});

describe('front door with the protocols daemon down', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi(sqlite, { 'listen:protocols': `127.0.0.1:${await freePort()}` });
  }, 60_000);
  afterAll(async () => api?.close());

  it('answers 502 with the error body, for small and large bodies alike, and stays up', async () => {
    for (const body of [adRequest('alice@example.test'), Buffer.alloc(2 * 1024 * 1024)]) {
      const r = await request(`${api.url}/autodiscover/autodiscover.xml`, { method: 'POST', body });
      expect(r.status).toBe(502);
      expect(r.json).toEqual({ code: 'api-122', status: 502, message: 'Daemon unreachable' });
      // the front door's own answer carries the security headers of every answer
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(r.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    }
    expect((await request(`${api.url}/Vendor-Server-ActiveSync`, { method: 'OPTIONS' })).status).toBe(502);
    expect((await request(`${api.url}/api/status`)).status).toBe(200);
  });
});
