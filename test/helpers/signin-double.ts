import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errors as joseErrors, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { signToken } from '../../lib/auth/index.js';
import { loadConfig } from '../../lib/config/index.js';
import { AUDIENCE, ISSUER, TEST_SECRET } from './api.js';

/**
 * A stand-in for the sign-in service, for tests and the `svcmail doctor` checks only (never
 * shipped). It speaks the part of the contract the mail service relies on (Spec: Authentication):
 *
 * - GET /api/auth/password with an HTTP Basic header checks an app password and answers {token},
 *   an ordinary (non-elevated) HS256 access token carrying profile.uid and profile.roles, signed
 *   with the shared secret, audience and issuer.
 * - POST /oauth/session-token with `Authorization: Bearer <OAuth access token>` (the native app,
 *   Spec: Native app step 3) answers {token}: a session token with the user's roles, not elevated,
 *   and no cookies. The OAuth access tokens themselves (RS256, own issuer, no roles) come from
 *   `oauthAccessToken(uid)`, standing in for POST /oauth/token.
 *
 * - POST /api/auth/refresh (the web app renewing its session, cross-origin with credentials): the
 *   `refresh` cookie names the user; answers 204 with a new `jwt` cookie (HttpOnly, SameSite=Strict).
 * - POST /api/auth/logout: clears the `jwt`, `refresh` and `csrf` cookies (Max-Age=0) and answers 204.
 *   Both answer CORS for the calling origin with credentials, as the real service must for the web app.
 *
 * - GET /auth/elevate?return_to=<url> (a console sending the user to confirm who they are): the
 *   `refresh` cookie names the user; the real service asks for the password and second factor
 *   first, the double does not. Sets a `jwt` cookie with an elevation of now and redirects (302) to
 *   return_to, which must be an http URL on this host (any port: the mail service's) — never elsewhere.
 *   `elevations` counts them.
 *
 * Any other path answers 404 (the doctor only needs an answer below 500 and a Date header).
 */
export interface SigninUser {
  /** App passwords accepted for this user. */
  passwords: string[];
  roles?: string[];
}

export interface SigninDoubleOptions {
  /** username (the uid the token names) → app passwords and roles. */
  users: Record<string, SigninUser>;
  secret?: string;
  audience?: string;
  issuer?: string;
  /** Lifetime of the tokens it issues, in seconds (default one hour). */
  ttlSeconds?: number;
  /**
   * A misbehaving service: /api/auth/password answers elevated tokens (an `elevated` claim of now).
   * The mail service must not trust them as elevated.
   */
  elevated?: boolean;
}

export interface SigninCall {
  method: string;
  path: string;
  /** The username of the Basic header (or the uid of the OAuth token), null when there was none or it was malformed. */
  username: string | null;
  status: number;
  /** When the answer was sent (Date.now()). */
  at: number;
}

export interface SigninDouble {
  url: string;
  /** Every request received, in order. */
  calls: SigninCall[];
  /** Requests to /api/auth/password so far. */
  readonly passwordCalls: number;
  /** Issuer of the OAuth access tokens (not the session tokens' issuer). */
  readonly oauthIssuer: string;
  /** An OAuth access token for uid as POST /oauth/token would give the native app (RS256, own issuer, no roles). */
  oauthAccessToken(uid: string): Promise<string>;
  /** Changes the token lifetime of later answers. */
  setTtlSeconds(seconds: number): void;
  close(): Promise<void>;
}

function basicCredentials(header: string | undefined): { username: string; password: string } | null {
  const m = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m) return null;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? null : { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

export async function startSigninDouble(opts: SigninDoubleOptions): Promise<SigninDouble> {
  const secret = opts.secret ?? TEST_SECRET;
  const audience = opts.audience ?? AUDIENCE;
  const issuer = opts.issuer ?? ISSUER;
  const config = loadConfig({ env: { NODE_ENV: 'test' }, values: { 'auth:secret': secret, 'log:level': 'silent' } });
  const oauthKeys = await generateKeyPair('RS256');
  const oauthIssuer = `oauth.${issuer}`;
  let ttlSeconds = opts.ttlSeconds ?? 3600;
  const calls: SigninCall[] = [];
  const userOf = (name: string) => (Object.hasOwn(opts.users, name) ? opts.users[name] : undefined);
  const session = (uid: string, elevated: boolean) =>
    signToken(config, { uid, roles: userOf(uid)?.roles ?? [], elevated, ttlSeconds, secret, audience, issuer });

  type Answer = [number, unknown, string | null, Record<string, string | string[]>?];
  const cookieOf = (req: IncomingMessage, name: string) =>
    (req.headers.cookie ?? '')
      .split(/;\s*/)
      .find((c) => c.startsWith(`${name}=`))
      ?.slice(name.length + 1);
  const cleared = (name: string) => `${name}=; Path=/; Max-Age=0; SameSite=Strict`;
  async function webSession(req: IncomingMessage, path: string): Promise<Answer> {
    if (req.method !== 'POST') return [405, { message: 'POST only' }, null];
    if (path === '/api/auth/logout') return [204, null, null, { 'set-cookie': [cleared('jwt'), cleared('refresh'), cleared('csrf')] }];
    const uid = cookieOf(req, 'refresh');
    if (!uid || !userOf(uid)) return [401, { message: 'no refresh token' }, null];
    const token = await session(uid, false);
    return [204, null, uid, { 'set-cookie': [`jwt=${token}; Path=/; HttpOnly; SameSite=Strict`] }];
  }

  async function elevate(req: IncomingMessage): Promise<Answer> {
    const uid = cookieOf(req, 'refresh');
    if (!uid || !userOf(uid)) return [401, { message: 'not signed in' }, null];
    const back = new URL(req.url ?? '/', 'http://double').searchParams.get('return_to') ?? '';
    let target: URL;
    try {
      target = new URL(back);
    } catch {
      return [400, { message: 'return_to must be a URL' }, uid];
    }
    if (target.protocol !== 'http:' || target.hostname !== '127.0.0.1') return [400, { message: 'return_to must be on this host' }, uid];
    const token = await session(uid, true);
    return [302, null, uid, { location: target.href, 'set-cookie': [`jwt=${token}; Path=/; HttpOnly; SameSite=Strict`] }];
  }

  async function handle(req: IncomingMessage, path: string): Promise<Answer> {
    if (path === '/api/auth/refresh' || path === '/api/auth/logout') return webSession(req, path);
    if (path === '/auth/elevate') return elevate(req);
    if (path === '/api/auth/password') {
      if (req.method !== 'GET') return [405, { message: 'GET only' }, null];
      const cred = basicCredentials(req.headers.authorization);
      if (!cred) return [401, { message: 'Basic credentials required' }, null];
      const user = userOf(cred.username);
      if (!user || !user.passwords.includes(cred.password)) return [401, { message: 'invalid app password' }, cred.username];
      return [200, { token: await session(cred.username, opts.elevated === true) }, cred.username];
    }
    if (path === '/oauth/session-token') {
      if (req.method !== 'POST') return [405, { message: 'POST only' }, null];
      const bearer = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
      if (!bearer) return [401, { error: 'invalid_token' }, null];
      let uid: string;
      try {
        const { payload } = await jwtVerify(bearer, oauthKeys.publicKey, { algorithms: ['RS256'], issuer: oauthIssuer });
        uid = String(payload.sub ?? '');
      } catch (e) {
        return [401, { error: e instanceof joseErrors.JWTExpired ? 'token_expired' : 'invalid_token' }, null];
      }
      if (!userOf(uid)) return [401, { error: 'invalid_token' }, uid];
      // Spec: Native app — a session JWT with the user's roles, not elevated, without cookies.
      return [200, { token: await session(uid, false) }, uid];
    }
    return [404, { message: 'not found' }, null];
  }

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://double').pathname;
    req.resume();
    // The web app calls from its own origin with credentials: CORS for that origin.
    const cors: Record<string, string> = req.headers.origin
      ? { 'access-control-allow-origin': req.headers.origin, 'access-control-allow-credentials': 'true', vary: 'Origin' }
      : {};
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'content-type' }).end();
      return;
    }
    handle(req, path)
      .catch((): Answer => [500, { message: 'signing failed' }, null])
      .then(([status, body, username, headers = {}]) => {
        calls.push({ method: req.method ?? '', path, username, status, at: Date.now() });
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...cors, ...headers });
        res.end(status === 204 || status === 302 ? undefined : JSON.stringify(body));
      });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    calls,
    oauthIssuer,
    get passwordCalls() {
      return calls.filter((c) => c.path === '/api/auth/password').length;
    },
    oauthAccessToken: (uid) =>
      new SignJWT({ scope: 'openid offline_access', client_id: 'svc-native-app' })
        .setProtectedHeader({ alg: 'RS256', kid: 'double-1' })
        .setIssuedAt()
        .setIssuer(oauthIssuer)
        .setAudience(audience)
        .setSubject(uid)
        .setExpirationTime('10m')
        .sign(oauthKeys.privateKey),
    setTtlSeconds(seconds) {
      ttlSeconds = seconds;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
