// Reliability, fault injection: the store throwing or timing out. Every operation of the api app's
// OpenAPI registry is driven with the store failing (a plain Error carrying a connection string and
// a file path) and with the store hanging (past request_timeout_ms). Every answer must be the spec's
// error body (Spec: Errors — 500 api-199 or 503 api-113), without internals or stack, nothing may
// end in an unhandled rejection, and authentication that needs the store fails closed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../helpers/databases.js';
import { startSigninDouble, type SigninDouble } from '../helpers/signin-double.js';
import { problemsOf } from './faults.js';
import { keyOf, operationsOf, requestFor, send, type Operation } from './operations.js';
import { startWorld, type World } from './world.js';

const backends = await sqlBackends();
const TIMEOUT = 2000; // request_timeout_ms of the app under test
const APP_PW = 'alice-app-password-3c1d';
const BASIC_PATH = '/api/mail/folders';

const rejections: unknown[] = [];
const onRejection = (reason: unknown) => void rejections.push(reason);
beforeAll(() => void process.on('unhandledRejection', onRejection));
afterAll(() => void process.off('unhandledRejection', onRejection));

describe.each(backends)('the store throwing or hanging ($name)', (backend) => {
  let w: World;
  let signin: SigninDouble;
  let ops: Operation[];
  const touched = new Set<string>();
  const counts = { faults: 0, routes: 0, leaks: 0, reached: 0 };

  beforeAll(async () => {
    signin = await startSigninDouble({ users: { alice: { passwords: [APP_PW] } } });
    w = await startWorld(backend, {
      request_timeout_ms: TIMEOUT,
      'mail:auth_server_url': signin.url,
      'mail:basic_auth:paths': ['/mapi', '/Vendor-Server-ActiveSync', BASIC_PATH],
    });
    ops = await operationsOf(w);
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await signin?.close();
  });

  it('every operation, store throwing: a 5xx error body, no internals, never a success or a 404 built on a failed read', async () => {
    const problems: string[] = [];
    for (const op of ops) {
      w.faults.set('throw');
      w.faults.hits = 0;
      const a = await send(requestFor(w, op), 30_000);
      const reached = w.faults.hits > 0;
      w.faults.clear();
      if (reached) touched.add(keyOf(op));
      const found = problemsOf(a, { expectError: reached });
      counts.faults += 1;
      counts.leaks += found.filter((p) => p.startsWith('leak')).length;
      problems.push(...found.map((p) => `${keyOf(op)} -> ${a.status}: ${p}`));
    }
    counts.routes = ops.length;
    counts.reached = touched.size;
    expect(problems).toEqual([]);
    // The sweep is only worth something if it reached the store on most routes.
    expect(ops.length).toBeGreaterThan(250);
    expect(touched.size).toBeGreaterThan(ops.length * 0.8);
  }, 300_000);

  it('every operation, store hanging: 503 api-113 within request_timeout_ms, no internals; late failures are dropped quietly', async () => {
    const problems: string[] = [];
    // Which routes reach the store comes from the sweep above (run the file whole).
    const BATCH = 48;
    for (let i = 0; i < ops.length; i += BATCH) {
      const batch = ops.slice(i, i + BATCH);
      w.faults.set('hang', { hangMs: 60_000 });
      const answers = await Promise.all(batch.map((op) => send(requestFor(w, op), TIMEOUT + 20_000)));
      // The hung calls fail now: their handlers finish late, after the 503 (errorHandler drops them).
      w.faults.clear();
      batch.forEach((op, j) => {
        const a = answers[j];
        counts.faults += 1;
        const reached = touched.has(keyOf(op));
        const found = problemsOf(a, { expectError: reached });
        if (reached && a.status !== 503) found.push(`expected 503 api-113 (timeout), got ${a.status}`);
        if (a.ms > TIMEOUT + 15_000) found.push(`answered after ${a.ms} ms`);
        counts.leaks += found.filter((p) => p.startsWith('leak')).length;
        problems.push(...found.map((p) => `${keyOf(op)} -> ${a.status}: ${p}`));
      });
    }
    expect(problems).toEqual([]);
    // A timed-out route answered with the catalogue's 503.
    const statusOp = ops.find((o) => o.method === 'GET' && o.path === '/api/mail/folders/{id}')!;
    w.faults.set('hang', { hangMs: 60_000 });
    const a = await send(requestFor(w, statusOp), TIMEOUT + 20_000);
    w.faults.clear();
    expect(a.status).toBe(503);
    expect(JSON.parse(a.text)).toMatchObject({ code: 'api-113', status: 503 });
    expect(a.ms).toBeGreaterThanOrEqual(TIMEOUT - 50);
  }, 600_000);

  it('Basic app-password resolution needs the store: it fails closed (never signed in), then works once the store is back', async () => {
    const auth = `Basic ${Buffer.from(`alice@example.test:${APP_PW}`).toString('base64')}`;
    const get = () =>
      send({ url: `${w.api.url}${BASIC_PATH}?mailboxUid=${w.ids.mailbox}`, init: { headers: { authorization: auth } } }, TIMEOUT + 20_000);
    for (const mode of ['throw', 'hang'] as const) {
      w.faults.set(mode, { only: (c) => c.model === 'mail_address', hangMs: 60_000 });
      w.faults.hits = 0;
      const a = await get();
      w.faults.clear();
      counts.faults += 1;
      expect(w.faults.hits, mode).toBeGreaterThan(0);
      expect(a.status, mode).toBeGreaterThanOrEqual(500);
      expect(problemsOf(a, { expectError: true, extra: [APP_PW] }), mode).toEqual([]);
    }
    expect(signin.passwordCalls).toBe(0); // the password was never even checked
    const ok = await get();
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.text).some((f: { uid: string }) => f.uid === w.ids.inbox)).toBe(true);
  }, 60_000);

  it('ACL lookups failing never let a shared-with reader (or the owner) through', async () => {
    const reads = [
      (t: string) =>
        requestFor(
          w,
          { method: 'GET', path: '/api/mail/folders/{id}', auth: 'signed-in', query: [], body: null },
          { authorization: `Bearer ${t}` },
        ),
      (t: string) =>
        requestFor(
          w,
          { method: 'GET', path: '/api/mail/messages/{id}', auth: 'signed-in', query: [], body: null },
          { authorization: `Bearer ${t}` },
        ),
      (t: string) =>
        requestFor(
          w,
          { method: 'GET', path: '/api/mail/messages/{id}/raw', auth: 'signed-in', query: [], body: null },
          { authorization: `Bearer ${t}` },
        ),
    ];
    for (const token of [w.tokens.carol, w.tokens.alice]) {
      for (const build of reads) {
        // Healthy, the read is allowed (so a refusal below is the fault's doing)...
        expect((await send(build(token), 10_000)).status).toBe(200);
        // Hanging costs request_timeout_ms each: once per caller is enough to show the timeout path.
        for (const mode of build === reads[0] ? (['throw', 'hang'] as const) : (['throw'] as const)) {
          w.faults.set(mode, { only: (c) => c.model === 'acl_entry', hangMs: 60_000 });
          w.faults.hits = 0;
          const a = await send(build(token), TIMEOUT + 20_000);
          const hits = w.faults.hits;
          w.faults.clear();
          counts.faults += 1;
          if (hits === 0) continue; // this read does not consult ACL entries for this caller
          expect(a.status, `${mode} ${a.text}`).toBeGreaterThanOrEqual(500);
          expect(problemsOf(a, { expectError: true, extra: ['with attachment', 'See the page'] })).toEqual([]);
        }
      }
    }
    // carol's access exists only through the ACL entry, so her reads must have consulted it.
    w.faults.set('throw', { only: (c) => c.model === 'acl_entry' });
    w.faults.hits = 0;
    const a = await send(reads[0](w.tokens.carol), 10_000);
    w.faults.clear();
    expect(w.faults.hits).toBeGreaterThan(0);
    expect(a.status).toBe(500);
  }, 120_000);

  // Last of the sweeps: the late handlers really run, so they may change the fixtures.
  it('every operation, store slow (answers after request_timeout_ms): 503 in time; the handlers finishing late crash nothing', async () => {
    const problems: string[] = [];
    const BATCH = 48;
    for (let i = 0; i < ops.length; i += BATCH) {
      const batch = ops.slice(i, i + BATCH);
      w.faults.set('slow', { slowMs: TIMEOUT + 300 });
      const answers = await Promise.all(batch.map((op) => send(requestFor(w, op), TIMEOUT + 20_000)));
      // Calls already waiting complete for real now: their handlers go on and answer into ended responses.
      w.faults.clear();
      batch.forEach((op, j) => {
        const a = answers[j];
        counts.faults += 1;
        const found = problemsOf(a, { expectError: false });
        if (touched.has(keyOf(op)) && a.status !== 503) found.push(`expected 503 api-113 (timeout), got ${a.status}`);
        problems.push(...found.map((p) => `${keyOf(op)} -> ${a.status}: ${p}`));
      });
      await new Promise((r) => setTimeout(r, 500)); // let the late handlers run before the next batch
    }
    expect(problems).toEqual([]);
    // The late handlers did finish: the app answers normally and nothing is left waiting.
    expect((await w.api.call('GET', `/api/mail/folders/${w.ids.inbox}`, { token: w.tokens.alice })).status).toBe(200);
  }, 600_000);

  it('the app is healthy once the store is back, and nothing ended in an unhandled rejection', async () => {
    await new Promise((r) => setTimeout(r, 200));
    const r = await w.api.call('GET', `/api/mail/folders/${w.ids.inbox}`, { token: w.tokens.alice });
    expect(r.status).toBe(200);
    expect(w.faults.hanging).toBe(0);
    expect(rejections.map(String)).toEqual([]);
    // eslint-disable-next-line no-console -- the figures of the run, for the report
    console.log(
      `reliability: store faults (${backend.name}): faults tried ${counts.faults}, routes checked ${counts.routes}, routes reaching the store ${counts.reached}, leaks ${counts.leaks}, unhandled rejections ${rejections.length}`,
    );
  });
});
