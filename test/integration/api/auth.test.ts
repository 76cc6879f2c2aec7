import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainModel } from '../../../lib/settings/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { AUDIENCE, ISSUER, seedUsers, startTestApi, TEST_SECRET, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

/** A token shaped like the sign-in service's, with every part under the test's control. */
async function forge(
  opts: { secret?: string; aud?: string; iss?: string; exp?: number; claims?: Record<string, unknown> } = {},
): Promise<string> {
  return new SignJWT(opts.claims ?? { profile: { uid: 'alice', roles: [] } })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setAudience(opts.aud ?? AUDIENCE)
    .setIssuer(opts.iss ?? ISSUER)
    .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 600)
    .sign(new TextEncoder().encode(opts.secret ?? TEST_SECRET));
}

// Spec: Authentication (carrying the token, roles and elevation) and Errors api-100..api-105.
describe.each(backends)('authentication on $name', (backend) => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  let inbox: string;

  beforeAll(async () => {
    api = await startTestApi(backend);
    people = await seedUsers(api);
    const folders = await api.call('GET', `/api/mail/folders?mailboxUid=${people.aliceBox.uid}&role=inbox`, { token: people.alice });
    inbox = folders.body[0].uid;
  });
  afterAll(async () => api?.close());

  const readInbox = (headers: Record<string, string>) => api.call('GET', `/api/mail/folders/${inbox}`, { headers });

  it('a valid bearer token reads the own inbox (the control case)', async () => {
    const r = await readInbox({ authorization: `Bearer ${await forge()}` });
    expect(r).toMatchObject({ status: 200, body: { uid: inbox, name: 'Inbox' } });
  });

  it.each<[string, number, string, () => Promise<Record<string, string>>]>([
    ['no token', 401, 'api-100', async () => ({})],
    ['an empty bearer', 401, 'api-100', async () => ({ authorization: 'Bearer ' })],
    ['another scheme (Basic is not taken here)', 401, 'api-100', async () => ({ authorization: 'Basic YWxpY2U6cGFzcw==' })],
    ['garbage', 403, 'api-101', async () => ({ authorization: 'Bearer not.a.token' })],
    ['a bad signature', 403, 'api-101', async () => ({ authorization: `Bearer ${await forge({ secret: 'another-secret-0123456789' })}` })],
    ['a wrong audience', 403, 'api-101', async () => ({ authorization: `Bearer ${await forge({ aud: 'other.test' })}` })],
    ['a wrong issuer', 403, 'api-101', async () => ({ authorization: `Bearer ${await forge({ iss: 'evil.test' })}` })],
    [
      'an expired token',
      401,
      'api-100',
      async () => ({ authorization: `Bearer ${await forge({ exp: Math.floor(Date.now() / 1000) - 30 })}` }),
    ],
    ['a token without profile', 403, 'api-101', async () => ({ authorization: `Bearer ${await forge({ claims: { sub: 'alice' } })}` })],
    [
      'an unsigned (alg none) token',
      403,
      'api-101',
      async () => ({
        authorization: `Bearer ${new UnsecuredJWT({ profile: { uid: 'alice', roles: [] } }).setAudience(AUDIENCE).setIssuer(ISSUER).setExpirationTime('10m').encode()}`,
      }),
    ],
    [
      'an RS256 token (an OAuth access token: sign in for a session token)',
      401,
      'api-100',
      async () => {
        const { privateKey } = await generateKeyPair('RS256');
        const t = await new SignJWT({ profile: { uid: 'alice', roles: [] } })
          .setProtectedHeader({ alg: 'RS256' })
          .setAudience(AUDIENCE)
          .setIssuer(ISSUER)
          .setExpirationTime('10m')
          .sign(privateKey);
        return { authorization: `Bearer ${t}` };
      },
    ],
    ['an invalid jwt cookie', 403, 'api-101', async () => ({ cookie: 'jwt=abc.def.ghi' })],
  ])('%s → %i %s', async (_what, status, code, headers) => {
    const r = await readInbox(await headers());
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ code, status, message: expect.any(String) });
  });

  it.each(['access_token', 'token', 'jwt'])('a token in the query string (?%s=) is refused with 401', async (param) => {
    const t = await forge();
    const r = await api.call('GET', `/api/mail/folders/${inbox}?${param}=${t}`);
    expect(r).toMatchObject({ status: 401, body: { code: 'api-100' } });
    // even next to a valid header the query token is refused
    const both = await api.call('GET', `/api/mail/folders/${inbox}?${param}=${t}`, { token: t });
    expect(both.status).toBe(401);
  });

  describe('jwt cookie and CSRF', () => {
    let folder: { uid: string; version: number };
    beforeAll(async () => {
      const r = await api.call('POST', '/api/mail/folders', {
        token: people.alice,
        body: { mailboxUid: people.aliceBox.uid, name: 'csrf-0' },
      });
      folder = r.body;
    });

    const stored = async () =>
      (await api.call('GET', `/api/mail/folders/${folder.uid}`, { token: people.alice })).body as { name: string; version: number };

    it('a cookie GET needs no CSRF token', async () => {
      const r = await readInbox({ cookie: `jwt=${people.alice}` });
      expect(r).toMatchObject({ status: 200, body: { uid: inbox } });
    });

    it.each<[string, (t: string) => Record<string, string>]>([
      ['no x-csrf-token and no csrf cookie', (t) => ({ cookie: `jwt=${t}` })],
      ['a csrf cookie but no header', (t) => ({ cookie: `jwt=${t}; csrf=abc123` })],
      ['a header but no csrf cookie', (t) => ({ cookie: `jwt=${t}`, 'x-csrf-token': 'abc123' })],
      ['a mismatching header', (t) => ({ cookie: `jwt=${t}; csrf=abc123`, 'x-csrf-token': 'abc124' })],
      ['a header of another length', (t) => ({ cookie: `jwt=${t}; csrf=abc123`, 'x-csrf-token': 'abc1234' })],
    ])('a cookie write with %s → 403 api-105, nothing changed', async (_what, headers) => {
      const before = await stored();
      const r = await api.call('PUT', `/api/mail/folders/${folder.uid}`, {
        headers: headers(people.alice),
        body: { name: 'csrf-changed', version: before.version },
      });
      expect(r).toMatchObject({ status: 403, body: { code: 'api-105' } });
      expect(await stored()).toEqual(before);
    });

    it('a cookie write with the matching csrf cookie and header succeeds', async () => {
      const before = await stored();
      const r = await api.call('PUT', `/api/mail/folders/${folder.uid}`, {
        headers: { cookie: `csrf=s3cr3t-value; jwt=${people.alice}`, 'x-csrf-token': 's3cr3t-value' },
        body: { name: 'csrf-ok', version: before.version },
      });
      expect(r).toMatchObject({ status: 200, body: { name: 'csrf-ok', version: before.version + 1 } });
      expect(await stored()).toMatchObject({ name: 'csrf-ok', version: before.version + 1 });
    });

    it('a bearer write needs no CSRF token', async () => {
      const before = await stored();
      const r = await api.call('PUT', `/api/mail/folders/${folder.uid}`, {
        token: people.alice,
        body: { name: 'bearer-ok', version: before.version },
      });
      expect(r.status).toBe(200);
      expect((await stored()).name).toBe('bearer-ok');
    });
  });

  describe('trusted roles and elevation', () => {
    const domainCount = () => api.deps.store.repo(DomainModel).count();

    it.each<[string, number, string, () => Promise<string>]>([
      ['a non-elevated token with role admin', 403, 'api-103', () => api.token({ uid: 'root', roles: ['admin'] })],
      ['an elevated token without a trusted role', 403, 'api-103', () => api.token({ uid: 'alice', roles: ['staff'], elevated: true })],
      ['a plain user token', 403, 'api-103', () => api.token({ uid: 'alice' })],
    ])('%s cannot create a domain (%i %s)', async (_what, status, code, tok) => {
      const before = await domainCount();
      const r = await api.call('POST', '/api/mail/domains', { token: await tok(), body: { name: 'sneaky.test' } });
      expect(r).toMatchObject({ status, body: { code } });
      expect(await domainCount()).toBe(before);
    });

    it('an elevated admin creates a domain (control case)', async () => {
      const r = await api.call('POST', '/api/mail/domains', { token: people.admin, body: { name: 'allowed.test' } });
      expect(r.status).toBe(201);
      expect(await api.deps.store.repo(DomainModel).findOne({ name: 'allowed.test' })).not.toBeNull();
    });

    it.each<[string, number, number | null, string | null]>([
      ['fresh elevation', 200, 5, null],
      ['elevation just inside the maximum age', 200, 890, null],
      ['stale elevation (older than elevation_max_age_seconds)', 403, 901, 'api-104'],
      ['elevation an hour old', 403, 3600, 'api-104'],
      // Spec: "With none or stale elevation the answer is 403, code api-104."
      ['no elevation at all', 403, null, 'api-104'],
    ])('?scope=admin with %s → %i', async (_what, status, ageSeconds, code) => {
      const token = await api.token({
        uid: 'root',
        roles: ['admin'],
        elevated: ageSeconds === null ? false : new Date(Date.now() - ageSeconds * 1000),
      });
      const r = await api.call('GET', `/api/mail/mailboxes/${people.aliceBox.uid}?scope=admin`, { token });
      expect(r.status).toBe(status);
      if (code) expect(r.body.code).toBe(code);
      else expect(r.body.address).toBe('alice@example.test');
    });

    it('elevation_max_age_seconds is read from the configuration', async () => {
      const short = await startTestApi(backend, { 'mail:security:elevation_max_age_seconds': 60 });
      try {
        const p = await seedUsers(short);
        const token = await short.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 120_000) });
        const r = await short.call('GET', `/api/mail/mailboxes?scope=admin`, { token });
        expect(r).toMatchObject({ status: 403, body: { code: 'api-104' } });
        expect((await short.call('GET', `/api/mail/mailboxes?scope=admin`, { token: p.admin })).status).toBe(200);
      } finally {
        await short.close();
      }
    });
  });
});
