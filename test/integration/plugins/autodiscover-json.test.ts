// Autodiscover v2 (JSON) against the real protocols app: the {Protocol, Url} shape clients parse,
// the {ErrorCode, ErrorMessage} error form next to the spec's error body, the query form,
// case-insensitive protocol names, nothing advertised until public_url is set, rate limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin } from '../../../lib/plugins/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { request, seed, startStack, type Stack } from './_stack.js';
import { testEas } from './_plugins.js';

const backends = await sqlBackends();
const PUBLIC = 'https://mail.example.test';

describe.each(backends.map((b) => [b.name, b] as const))('Autodiscover JSON v2 on %s', (_name, backend) => {
  let stack: Stack;
  let admin: string;
  const get = (path: string) => request(`${stack.protocols}${path}`);
  beforeAll(async () => {
    stack = await startStack(backend, { values: { 'mail:autodiscover:public_url': PUBLIC }, plugins: [autodiscoverPlugin, testEas] });
    ({ admin } = await seed(stack));
  }, 60_000);
  afterAll(async () => stack?.close());

  it.each([
    ['/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=ActiveSync', 'ActiveSync', `${PUBLIC}/Vendor-Server-ActiveSync`],
    ['/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=activesync', 'ActiveSync', `${PUBLIC}/Vendor-Server-ActiveSync`],
    [
      '/autodiscover/autodiscover.json/v1.0/alice%40example.test?protocol=ACTIVESYNC&RedirectCount=1',
      'ActiveSync',
      `${PUBLIC}/Vendor-Server-ActiveSync`,
    ],
    [
      '/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=AutodiscoverV1',
      'AutodiscoverV1',
      `${PUBLIC}/autodiscover/autodiscover.xml`,
    ],
    ['/autodiscover/autodiscover.json?Email=alice@example.test&Protocol=ActiveSync', 'ActiveSync', `${PUBLIC}/Vendor-Server-ActiveSync`],
    [
      '/autodiscover/autodiscover.json/v1.0?email=alice%40example.test&protocol=autodiscoverv1',
      'AutodiscoverV1',
      `${PUBLIC}/autodiscover/autodiscover.xml`,
    ],
    ['/AutoDiscover/AutoDiscover.json/v1.0/alice@example.test?Protocol=ActiveSync', 'ActiveSync', `${PUBLIC}/Vendor-Server-ActiveSync`],
  ])('%s → {Protocol, Url}', async (path, protocol, url) => {
    const r = await get(path);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.json).toEqual({ Protocol: protocol, Url: url });
  });

  it('the answer is the same for an existing and a non-existing address (nothing is echoed)', async () => {
    const known = await get('/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=ActiveSync');
    const unknown = await get('/autodiscover/autodiscover.json/v1.0/nobody@example.test?Protocol=ActiveSync');
    expect(unknown.status).toBe(known.status);
    expect(unknown.text).toBe(known.text);
  });

  it.each([
    [
      'an unknown protocol',
      '/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=Ews',
      'InvalidProtocol',
      /Ews.*supported values are ActiveSync, AutodiscoverV1/,
    ],
    ['no protocol', '/autodiscover/autodiscover.json/v1.0/alice@example.test', 'InvalidProtocol', /Protocol is required/],
    [
      'a repeated protocol',
      '/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=ActiveSync&protocol=AutodiscoverV1',
      'InvalidProtocol',
      /more than once/,
    ],
    [
      'a display name',
      `/autodiscover/autodiscover.json/v1.0/${encodeURIComponent('Alice <alice@example.test>')}?Protocol=ActiveSync`,
      'InvalidUser',
      /plain address/,
    ],
    ['no address', '/autodiscover/autodiscover.json?Protocol=ActiveSync', 'InvalidUser', /Email is required/],
    ['a list', '/autodiscover/autodiscover.json?Email=a@example.test,b@example.test&Protocol=ActiveSync', 'InvalidUser', /plain address/],
  ])('%s: 400 with the spec error body and ErrorCode/ErrorMessage', async (_n, path, errorCode, message) => {
    const r = await get(path);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'api-106', status: 400, ErrorCode: errorCode });
    expect(r.json.message).toMatch(message);
    expect(r.json.ErrorMessage).toBe(r.json.message);
  });

  it('a protocol whose plugin is disabled is not offered: 404 ProtocolNotAvailable; back when enabled', async () => {
    const path = '/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=ActiveSync';
    expect((await stack.call('PUT', '/api/system/plugins/test-eas', admin, { enabled: false })).status).toBe(200);
    const r = await get(path);
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ code: 'api-107', status: 404, ErrorCode: 'ProtocolNotAvailable' });
    // AutodiscoverV1 is this plugin's own and still answers.
    expect((await get('/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=AutodiscoverV1')).status).toBe(200);
    await stack.call('PUT', '/api/system/plugins/test-eas', admin, { enabled: true });
    expect((await get(path)).json).toEqual({ Protocol: 'ActiveSync', Url: `${PUBLIC}/Vendor-Server-ActiveSync` });
  });
});

describe.each(backends.slice(0, 1).map((b) => [b.name, b] as const))(
  'Autodiscover JSON without public_url, and its rate limit (%s)',
  (_name, backend) => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack(backend, {
        values: { 'rateLimit:max': 5, 'rateLimit:window_ms': 60_000 },
        plugins: [autodiscoverPlugin, testEas],
      });
    }, 60_000);
    afterAll(async () => stack?.close());

    it('advertises nothing until mail:autodiscover:public_url is set, then is rate-limited per client (429 api-109)', async () => {
      for (const p of ['ActiveSync', 'AutodiscoverV1']) {
        const r = await request(`${stack.protocols}/autodiscover/autodiscover.json/v1.0/alice@example.test?Protocol=${p}`);
        expect(r.status).toBe(404);
        expect(r.json).toMatchObject({ code: 'api-107', ErrorCode: 'ProtocolNotAvailable' });
      }
      const seen: number[] = [];
      for (let i = 0; i < 5; i++)
        seen.push((await request(`${stack.protocols}/autodiscover/autodiscover.json?Email=a@example.test&Protocol=ActiveSync`)).status);
      expect(seen.slice(0, 3)).toEqual([404, 404, 404]);
      const limited = await request(`${stack.protocols}/autodiscover/autodiscover.xml`, { method: 'POST', body: '<x/>' });
      expect(limited.status).toBe(429);
      expect(limited.json).toMatchObject({ code: 'api-109', status: 429 });
      expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    });
  },
);
