import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';

// Spec: Finding the server from an address — GET /.well-known/svc/server-info → {authServerUrl},
// public; CORS per cors:origins (a web client on another origin reads it).

const [sqlite] = await sqlBackends();
const WEB = 'https://webmail.example.test';

describe('discovery: server-info and CORS', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi(sqlite, { 'mail:auth_server_url': 'https://auth.example.test', 'cors:origins': [WEB] });
  });
  afterAll(async () => api?.close());

  const info = (headers: Record<string, string> = {}, method = 'GET') => api.call(method, '/.well-known/svc/server-info', { headers });

  it('an allowed origin gets Access-Control-Allow-Origin with the answer', async () => {
    const r = await info({ origin: WEB });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ authServerUrl: 'https://auth.example.test' });
    expect(r.headers.get('access-control-allow-origin')).toBe(WEB);
    expect(r.headers.get('vary')).toMatch(/origin/i);
  });

  it.each([
    ['another origin', 'https://evil.example'],
    ['a look-alike origin', `${WEB}.evil.example`],
    ['the allowed host over http', 'http://webmail.example.test'],
  ])('%s gets no CORS headers (the browser withholds the answer)', async (_what, origin) => {
    const r = await info({ origin });
    expect(r.status).toBe(200); // public: the answer is the same, only the browser's permission differs
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    expect(r.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('no Origin header, no CORS headers', async () => {
    const r = await info();
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('a preflight from the allowed origin is answered; from another it is not allowed', async () => {
    const ok = await info({ origin: WEB, 'access-control-request-method': 'GET' }, 'OPTIONS');
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(WEB);
    expect(ok.headers.get('access-control-allow-methods')).toContain('GET');
    const other = await info({ origin: 'https://evil.example', 'access-control-request-method': 'GET' }, 'OPTIONS');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});
