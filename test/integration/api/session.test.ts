// GET /api/session: the caller's session as the token says — the web app's only way to see its
// HttpOnly cookie's expiry and elevation — and when to renew it (15 minutes before expiry).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';

const [backend] = await sqlBackends();

describe('GET /api/session', () => {
  let api: TestApi;
  beforeAll(async () => (api = await startTestApi(backend)));
  afterAll(async () => api?.close());

  it('answers uid, roles, expiry, renewal time and elevation freshness; no-store', async () => {
    const token = await api.token({ uid: 'alice', roles: ['admin'], ttlSeconds: 3600 });
    const res = await fetch(`${api.url}/api/session`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.headers.get('cache-control')).toBe('no-store');
    const s = (await res.json()) as Record<string, string | null>;
    expect(s).toMatchObject({ uid: 'alice', roles: ['admin'], via: 'bearer', elevatedAt: null, elevatedUntil: null });
    const left = Date.parse(s.expiresAt!) - Date.now();
    expect(left).toBeGreaterThan(3590_000);
    expect(Date.parse(s.expiresAt!) - Date.parse(s.renewAt!)).toBe(15 * 60_000);

    const at = new Date(Date.now() - 60_000);
    const elevated = await api.token({ uid: 'root', roles: ['admin'], elevated: at });
    const e = (await api.call('GET', '/api/session', { token: elevated })).body;
    const maxAge = api.config.get('mail:security:elevation_max_age_seconds') * 1000;
    expect(Date.parse(e.elevatedUntil) - Date.parse(e.elevatedAt)).toBe(maxAge);
    // a token with less than 15 minutes left is due for renewal now
    const short = await api.token({ uid: 'alice', ttlSeconds: 300 });
    const d = (await api.call('GET', '/api/session', { token: short })).body;
    expect(Math.abs(Date.parse(d.renewAt) - Date.now())).toBeLessThan(5000);
  });

  it('without a token: 401 api-100', async () => {
    expect((await api.call('GET', '/api/session')).body).toMatchObject({ status: 401, code: 'api-100' });
  });
});
