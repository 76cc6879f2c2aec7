import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { startSigninDouble, type SigninDouble } from '../../helpers/signin-double.js';

// Spec: Native app (OAuth with PKCE) step 3, Session token ("OAuth access tokens are a different
// kind (RS256, own issuer, no roles) and are not accepted by the API"), Token lifecycle.

const backends = await sqlBackends();

describe.each(backends)('native app tokens on $name', (backend) => {
  let api: TestApi;
  let signin: SigninDouble;
  let people: Awaited<ReturnType<typeof seedUsers>>;

  beforeAll(async () => {
    signin = await startSigninDouble({ users: { alice: { passwords: [] }, root: { passwords: [], roles: ['admin'] } } });
    api = await startTestApi(backend, { 'mail:auth_server_url': signin.url });
    people = await seedUsers(api);
  });
  afterAll(async () => {
    await api?.close();
    await signin?.close();
  });

  const exchange = (oauthToken: string) =>
    fetch(`${signin.url}/oauth/session-token`, { method: 'POST', headers: { authorization: `Bearer ${oauthToken}` } });
  const readBox = (token: string) => api.call('GET', `/api/mail/mailboxes/${people.aliceBox.uid}`, { token });

  it('the session token from /oauth/session-token (no cookies, not elevated) is accepted', async () => {
    const res = await exchange(await signin.oauthAccessToken('alice'));
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toBeNull();
    const { token } = (await res.json()) as { token: string };
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ profile: { uid: 'alice', roles: [] } });
    expect(claims.elevated).toBeUndefined();
    const r = await readBox(token);
    expect(r).toMatchObject({ status: 200, body: { uid: people.aliceBox.uid, address: 'alice@example.test' } });
    // Mailbox-scoped as any token: bob's mailbox stays invisible.
    expect((await api.call('GET', `/api/mail/mailboxes/${people.bobBox.uid}`, { token })).status).toBe(404);
  });

  it("an administrator's session token carries the role but not elevation: administration is refused with api-104", async () => {
    const { token } = (await (await exchange(await signin.oauthAccessToken('root'))).json()) as { token: string };
    expect(decodeJwt(token)).toMatchObject({ profile: { uid: 'root', roles: ['admin'] } });
    const r = await api.call('GET', '/api/mail/mailboxes?scope=admin', { token });
    expect(r).toMatchObject({ status: 403, body: { code: 'api-104' } });
  });

  it('the OAuth RS256 access token itself is refused with 401 api-100', async () => {
    const oauth = await signin.oauthAccessToken('alice');
    expect(decodeJwt(oauth)).toMatchObject({ sub: 'alice', iss: signin.oauthIssuer });
    const r = await readBox(oauth);
    expect(r).toEqual({
      status: 401,
      body: { code: 'api-100', status: 401, message: expect.stringMatching(/session-token/) },
      headers: expect.anything(),
    });
    expect((await api.call('GET', '/api/mail/mailboxes', { headers: { cookie: `jwt=${oauth}` } })).status).toBe(401);
  });

  it('the double refuses to exchange anything but its own OAuth access token', async () => {
    expect((await exchange(people.alice)).status).toBe(401); // a session token is not an OAuth token
    expect((await fetch(`${signin.url}/oauth/session-token`, { method: 'POST' })).status).toBe(401);
    expect(signin.calls.filter((c) => c.path === '/oauth/session-token' && c.status === 401)).toHaveLength(2);
  });
});
