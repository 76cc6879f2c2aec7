import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSqlite } from '../helpers/databases.js';
import { AUDIENCE, ISSUER, startTestApi, TEST_SECRET, type TestApi } from '../helpers/api.js';

// docs/SECURITY.md, Session tokens — session token claims: iat is required and not in the future (clock
// tolerance auth:options:clock_tolerance_seconds), the lifetime exp − iat is at most
// auth:options:max_token_age_seconds plus the tolerance, and `elevated` counts only as a number in
// the past. Each refusal is api-101 (403) and makes no change; the control cases pass.

const now = () => Math.floor(Date.now() / 1000);

/** A token shaped like the sign-in service's, with iat, exp and the claims under the test's control. */
async function forge(opts: { iat?: number | null; exp?: number; claims?: Record<string, unknown> } = {}): Promise<string> {
  let jwt = new SignJWT({ profile: { uid: 'root', roles: ['admin'] }, ...opts.claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setAudience(AUDIENCE)
    .setIssuer(ISSUER)
    .setExpirationTime(opts.exp ?? now() + 600);
  if (opts.iat !== null) jwt = jwt.setIssuedAt(opts.iat ?? now());
  return jwt.sign(new TextEncoder().encode(TEST_SECRET));
}

describe('session token claims', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ name: 'sqlite', open: async () => freshSqlite() });
  });
  afterAll(async () => api?.close());

  /** An elevated administrator's write: it passes only when the token and its elevation count. */
  const createDomain = (token: string, name: string) => api.call('POST', '/api/mail/domains', { token, body: { name } });
  const domainExists = async (name: string) =>
    (await api.call('GET', `/api/mail/domains?name=${name}`, { token: await forge({ claims: { elevated: now() } }) })).body.length === 1;

  it('control: an elevated token issued now, living an hour, creates a domain', async () => {
    const r = await createDomain(await forge({ exp: now() + 3600, claims: { elevated: now() - 5 } }), 'control.test');
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    // a few seconds of clock difference either way are tolerated
    const skewed = await createDomain(await forge({ iat: now() + 20, exp: now() + 3620, claims: { elevated: now() + 20 } }), 'skewed.test');
    expect(skewed.status, JSON.stringify(skewed.body)).toBe(201);
  });

  it.each([
    ['without iat', { iat: null }, /iat/],
    ['issued in the future', { iat: now() + 600, exp: now() + 1200 }, /future/],
    [
      'living longer than auth:options:max_token_age_seconds',
      { iat: now() - 10, exp: now() + 86_400 },
      /auth:options:max_token_age_seconds/,
    ],
    ['issued long ago and still valid (a 30-day token)', { iat: now() - 30 * 86_400, exp: now() + 600 }, /lifetime/],
  ])('a token %s is refused (api-101) and changes nothing', async (_what, opts, message) => {
    const name = `t${Math.random().toString(36).slice(2, 8)}.test`;
    const r = await createDomain(await forge({ ...opts, claims: { elevated: now() } }), name);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: 'api-101', status: 403 });
    expect(r.body.message).toMatch(message);
    expect(await domainExists(name)).toBe(false);
  });

  it.each([
    ['in the future', () => now() + 3600],
    ['a string', () => 'yes'],
    ['an ISO date', () => new Date().toISOString()],
    ['true', () => true],
    ['zero', () => 0],
    ['negative', () => -5],
    ['an object', () => ({ at: now() })],
  ])('an elevated claim %s is refused (api-101): garbage never counts as an elevation', async (_what, value) => {
    const name = `e${Math.random().toString(36).slice(2, 8)}.test`;
    const r = await createDomain(await forge({ claims: { elevated: value() } }), name);
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('api-101');
    expect(await domainExists(name)).toBe(false);
  });

  it('an absent, null or false elevated claim is a plain token: the admin role does not count (api-103)', async () => {
    for (const elevated of [undefined, null, false]) {
      const r = await createDomain(await forge({ claims: elevated === undefined ? {} : { elevated } }), 'plain.test');
      expect(r.body.code).toBe('api-103');
    }
  });

  it('the lifetime limit is a setting: a server allowing 2 h accepts a 2-hour token', async () => {
    const long = await startTestApi({ name: 'sqlite', open: async () => freshSqlite() }, { 'auth:options:max_token_age_seconds': 7200 });
    try {
      const token = await forge({ exp: now() + 7200, claims: { elevated: now() } });
      expect((await long.call('POST', '/api/mail/domains', { token, body: { name: 'long.test' } })).status).toBe(201);
      expect((await createDomain(token, 'long.test')).body.code).toBe('api-101');
    } finally {
      await long.close();
    }
  });
});
