// Reliability, security review, as tests against the real api app: secrets never reach the log (tokens,
// Basic headers and app passwords, the ingest secret, auth:secret — on successful, refused and
// failing requests, at log level trace); the viewer page and the downloads carry nosniff, frame
// options and a Content-Security-Policy; an HTML attachment is never served for rendering; every
// route with a body refuses one over its limit with 413 api-110; the OpenAPI document states every
// route's authentication.
import { isProtocolPath } from '../../daemons/api/front-door.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/log/index.js';
import { TEST_SECRET } from '../helpers/api.js';
import { sqlBackends } from '../helpers/databases.js';
import { startSigninDouble, type SigninDouble } from '../helpers/signin-double.js';
import { keyOf, operationsOf, requestFor, send } from './operations.js';
import { INGEST_SECRET, startWorld, type World } from './world.js';

const backends = await sqlBackends();
const APP_PW = 'alice-app-password-77f0';
const WRONG_PW = 'wrong-app-password-0b3e';
const BASIC_PATH = '/api/mail/folders';
const BODY_LIMIT = 2048;
const RAW_LIMIT = 4096;

describe.each(backends)('security review ($name)', (backend) => {
  let w: World;
  let signin: SigninDouble;
  const lines: string[] = [];
  beforeAll(async () => {
    signin = await startSigninDouble({ users: { alice: { passwords: [APP_PW] } } });
    const log = createLogger({ level: 'trace', destination: { write: (l: string) => void lines.push(l) } });
    w = await startWorld(
      backend,
      {
        'mail:auth_server_url': signin.url,
        'mail:basic_auth:paths': ['/mapi', BASIC_PATH],
        body_limit_bytes: BODY_LIMIT,
        'mail:ingest:max_message_bytes': RAW_LIMIT,
        'mail:mailbox_import:max_upload_bytes': RAW_LIMIT,
      },
      { log },
    );
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await signin?.close();
  });

  it('secrets never reach the log: tokens, Basic credentials, the ingest secret, auth:secret', async () => {
    const start = lines.length;
    const signinToken = await w.api.token({ uid: 'alice', roles: [] });
    const forged = await w.api.token({ uid: 'alice', secret: 'another-secret-0123456789abcdef' });
    const expired = await w.api.token({ uid: 'alice', ttlSeconds: -60 });
    const basicOk = `Basic ${Buffer.from(`alice@example.test:${APP_PW}`).toString('base64')}`;
    const basicBad = `Basic ${Buffer.from(`alice@example.test:${WRONG_PW}`).toString('base64')}`;
    const secrets = [
      w.tokens.alice,
      w.tokens.admin,
      signinToken,
      forged,
      expired,
      basicOk.slice(6),
      basicBad.slice(6),
      APP_PW,
      WRONG_PW,
      INGEST_SECRET,
      TEST_SECRET,
    ];
    const get = (path: string, headers: Record<string, string>) => fetch(`${w.api.url}${path}`, { headers }).then((r) => r.text());
    const folders = `/api/mail/folders?mailboxUid=${w.ids.mailbox}`;
    await get(folders, { authorization: `Bearer ${signinToken}` });
    await get(folders, { authorization: `Bearer ${forged}` });
    await get(folders, { authorization: `Bearer ${expired}` });
    await get(folders, { authorization: `Bearer ${TEST_SECRET}` });
    await get(folders, { cookie: `jwt=${signinToken}; csrf=c1`, 'x-csrf-token': 'c1' });
    await get(`${folders}&access_token=${signinToken}`, {});
    await get(`${BASIC_PATH}?mailboxUid=${w.ids.mailbox}`, { authorization: basicOk });
    await get(`${BASIC_PATH}?mailboxUid=${w.ids.mailbox}`, { authorization: basicBad });
    await get('/internal/mta/domain?name=example.test', { authorization: `Bearer ${INGEST_SECRET}` });
    await get('/internal/mta/domain?name=example.test', { authorization: `Bearer ${INGEST_SECRET}x` });
    await fetch(`${w.api.url}/internal/mta/deliver`, {
      method: 'POST',
      body: 'Subject: x\r\n\r\nx\r\n',
      headers: { authorization: `Bearer ${INGEST_SECRET}`, 'content-type': 'message/rfc822', 'x-envelope-to': 'alice%40example.test' },
    }).then((r) => r.text());
    // Failing requests log their error with the request's context: the store throws while the caller's secrets are on the request.
    w.faults.set('throw');
    await get(folders, { authorization: `Bearer ${signinToken}` });
    await get(`${BASIC_PATH}?mailboxUid=${w.ids.mailbox}`, { authorization: basicBad });
    await fetch(`${w.api.url}/internal/mta/deliver`, {
      method: 'POST',
      body: 'Subject: y\r\n\r\ny\r\n',
      headers: { authorization: `Bearer ${INGEST_SECRET}`, 'content-type': 'message/rfc822', 'x-envelope-to': 'alice%40example.test' },
    }).then((r) => r.text());
    w.faults.clear();
    const log = lines.slice(start).join('');
    // The log saw these requests (so finding nothing means something): a line per request and the failure.
    expect(lines.length - start).toBeGreaterThan(14);
    expect(log).toContain('unhandled error');
    expect(secrets.filter((s) => log.includes(s)).map((s) => `${s.slice(0, 12)}…`)).toEqual([]);
    // The whole run's log too (fixtures, every earlier request).
    const all = lines.join('');
    expect(secrets.filter((s) => all.includes(s)).map((s) => `${s.slice(0, 12)}…`)).toEqual([]);
  }, 60_000);

  it('the OpenAPI viewer page and its assets carry nosniff, frame options and a Content-Security-Policy', async () => {
    for (const path of ['/api/openapi', '/api/openapi/assets/viewer-init.js', '/api/openapi/json']) {
      const r = await fetch(`${w.api.url}${path}`, { headers: { authorization: `Bearer ${w.tokens.alice}` } });
      await r.arrayBuffer();
      expect(r.status, path).toBe(200);
      expect(r.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(r.headers.get('x-frame-options'), path).toBe('DENY');
    }
    const page = await fetch(`${w.api.url}/api/openapi`, { headers: { authorization: `Bearer ${w.tokens.alice}` } });
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'self'/);
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
  });

  it('raw and attachment downloads: attachment disposition, nosniff, sandboxing CSP; an HTML attachment is never rendered', async () => {
    const head = (path: string) => fetch(`${w.api.url}${path}`, { headers: { authorization: `Bearer ${w.tokens.alice}` } });
    const raw = await head(`/api/mail/messages/${w.ids.message}/raw`);
    expect(raw.status).toBe(200);
    expect(await raw.text()).toContain('Subject: with attachment');
    const meta = (await w.api.call('GET', `/api/mail/messages/${w.ids.message}`, { token: w.tokens.alice })).body as {
      attachments: Array<{ id: string; contentType: string }>;
    };
    const html = meta.attachments.find((a) => a.contentType === 'text/html')!;
    expect(html).toBeTruthy();
    const att = await head(`/api/mail/messages/${w.ids.message}/attachments/${html.id}`);
    expect(att.status).toBe(200);
    expect(await att.text()).toContain('<script>');
    for (const [what, r] of [
      ['raw', raw],
      ['attachment', att],
    ] as const) {
      expect(r.headers.get('content-disposition'), what).toMatch(/^attachment\b/);
      expect(r.headers.get('x-content-type-options'), what).toBe('nosniff');
      expect(r.headers.get('x-frame-options'), what).toBe('DENY');
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp, what).toMatch(/\bsandbox\b/);
      expect(csp, what).toMatch(/default-src 'none'/);
    }
    // Served as an attachment and sandboxed: even opened directly it runs no script and loads nothing.
    expect(att.headers.get('content-type')).toMatch(/^(text\/html|application\/octet-stream)/);
  });

  it('every route with a body refuses one over its limit with 413 api-110 (JSON: body_limit_bytes; uploads: their own limits)', async () => {
    const ops = (await operationsOf(w)).filter((op) => ['POST', 'PUT', 'DELETE', 'PATCH'].includes(op.method));
    const problems: string[] = [];
    let checked = 0;
    for (const op of ops) {
      if (isProtocolPath(op.path)) continue; // forwarded whole to the protocols daemon, which keeps its own limits (its plugins' tests)
      const req = requestFor(w, op);
      const contentType = op.body?.contentType ?? 'application/json';
      const json = contentType.includes('json');
      // Past every limit the api daemon has: body_limit_bytes for JSON, 26 MiB beats the largest fixed upload limit (25 MiB + 64 KiB).
      const size = json ? BODY_LIMIT * 2 : 26 * 1024 * 1024;
      const body = json ? JSON.stringify({ pad: 'x'.repeat(size) }) : Buffer.alloc(size, 0x61);
      const a = await send(
        {
          url: req.url,
          init: { ...req.init, body, headers: { ...(req.init.headers as Record<string, string>), 'content-type': contentType } },
        },
        60_000,
      );
      checked += 1;
      let parsed: { code?: string; status?: number; message?: string } = {};
      try {
        parsed = JSON.parse(a.text);
      } catch {
        /* checked below */
      }
      if (a.status !== 413 || parsed.code !== 'api-110' || parsed.status !== 413 || typeof parsed.message !== 'string')
        problems.push(`${keyOf(op)} (${contentType}, ${size} bytes) -> ${a.status} ${a.text.slice(0, 100)}`);
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(100);
    // eslint-disable-next-line no-console -- the figures of the run, for the report
    console.log(`reliability: security review (${backend.name}): body limits checked on ${checked} routes, log secrets 11 kinds, leaks 0`);
  }, 300_000);

  it("the OpenAPI document states every route's authentication", async () => {
    const doc = (await w.api.call('GET', '/api/openapi/json', { token: w.tokens.alice })).body as {
      paths: Record<string, Record<string, { 'x-svcmail-auth'?: string; security?: unknown[]; description?: string }>>;
    };
    const missing: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, o] of Object.entries(ops)) {
        const auth = o['x-svcmail-auth'];
        if (!auth || !['none', 'signed-in', 'trusted', 'trusted-fresh', 'ingest-secret', 'basic-or-token'].includes(auth))
          missing.push(`${method} ${path}: x-svcmail-auth ${auth}`);
        if (!Array.isArray(o.security) || (auth !== 'none') !== o.security.length > 0) missing.push(`${method} ${path}: security`);
        if (!o.description?.includes('Authentication:')) missing.push(`${method} ${path}: description`);
      }
    }
    expect(missing).toEqual([]);
  });
});
