// Drives the authorization matrix: every operation of the api app's OpenAPI registry × every kind of
// caller, the expected verdict derived from the declarations, every answer searched for the owner's
// data. The test files pick a slice of the operations and assert on the tally.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { productRegistry } from '../../../lib/catalog.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';
import type { Backend } from '../../helpers/databases.js';
import { leaksIn, markersIn } from './leaks.js';
import { pathOf } from '../../../lib/resources/index.js';
import {
  CALLER_KINDS,
  expectedVerdicts,
  operationsOf,
  targetOf,
  verdictOf,
  type ApiOperation,
  type CallerKind,
  type Target,
  type Verdict,
} from './operations.js';
import { build, type Request } from './requests.js';
import { INGEST_SECRET, World } from './world.js';

/**
 * Operations the matrix does not drive, and why. Kept small (the test asserts a ceiling); a route is
 * never skipped by name here without a reason a reviewer can check.
 */
export const SKIPPED: Array<{ match: (op: ApiOperation) => boolean; why: string }> = [
  {
    match: (op) => op.daemon === 'protocols',
    why: 'served by the protocols daemon (documented in the api document so one document lists every route); the api app only forwards the path',
  },
];

/** Denials are asked first so they see the fixtures untouched; the owner and the elevated admin last. */
const ORDER: readonly CallerKind[] = [
  'no-token',
  'bad-signature',
  'wrong-audience',
  'wrong-issuer',
  'over-long',
  'elevated-future',
  'expired',
  'other',
  'reader',
  'admin-not-elevated',
  'admin-stale',
  'admin-elevated',
  'owner',
];
const METHOD_ORDER: Record<string, number> = { HEAD: 0, GET: 0, POST: 1, PUT: 1, DELETE: 2 };

export interface Tally {
  operations: number;
  requests: number;
  denials: number;
  /** Denials the declarations imply even before any fixture is involved (a floor for `denials`). */
  minimumDenials: number;
  leaks: number;
  skipped: number;
  failures: string[];
  /** Mailbox-scoped resource routes that were not aimed at the owner's data (should be none). */
  unaimed: string[];
  /** Writes whose stored state was read before and after the refused callers. */
  stateChecks: number;
}

export interface Matrix {
  api: TestApi;
  world: World;
  operations: ApiOperation[];
  close(): Promise<void>;
}

export async function openMatrix(backend: Backend): Promise<Matrix> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svcmail-matrix-data-'));
  const api = await startTestApi(backend, {
    data_dir: dataDir,
    'mail:transport:ingest:secret': INGEST_SECRET,
    'mail:jobs:wake_address': '',
  });
  const world = new World(api, productRegistry().all());
  await world.setup();
  const doc = (await api.call('GET', '/api/openapi/json', { token: world.owner })).body;
  return {
    api,
    world,
    operations: operationsOf(doc),
    async close() {
      await api.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const answerText = (body: unknown, headers: Headers) => {
  const hs = [...headers]
    .filter(([k]) => !['date', 'x-request-id'].includes(k))
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
  return `${hs}\n${typeof body === 'string' ? body : JSON.stringify(body ?? '')}`;
};

/** The stored state a write could change, read by someone allowed to read it (null: nothing to read). */
async function stateOf(m: Matrix, op: ApiOperation, t: Target, req: Request): Promise<string | null> {
  if (op.method === 'GET' || op.method === 'HEAD') return null;
  const token = req.ownerData ? m.world.owner : m.world.admin;
  let path: string | null = null;
  if (t.decl && t.byId) path = `${pathOf(t.decl)}/${new URL(req.url, 'http://x').pathname.split('/')[pathOf(t.decl).split('/').length]}`;
  else if (t.decl && t.generic) {
    // A collection write (create, bulk): the count of the owner's (or every) record of the resource.
    const filter = t.decl.scope === 'mailbox' ? `?${t.decl.mailboxField === 'uid' ? 'uid' : 'mailboxUid'}=${m.world.ids.mailbox}` : '';
    const r = await m.api.call('HEAD', `${pathOf(t.decl)}${filter}`, { token });
    return `count ${r.headers.get('x-total-count')}`;
  } else if (m.operations.some((o) => o.method === 'GET' && o.path === op.path && !o.query.some((q) => q.required))) path = op.path; // a singleton: PUT /api/system/<policy>
  if (!path) return null;
  const r = await m.api.call('GET', path, { token });
  return `${r.status} ${JSON.stringify(r.body)}`;
}

/** The floor of denials the declarations alone imply (before any fixture is made). */
export function declaredDenials(op: ApiOperation, t: Target): number {
  const ownerData = t.decl?.scope === 'mailbox' && t.generic && op.auth === 'signed-in' && !op.adminScope && !op.unfiltered;
  return CALLER_KINDS.filter((c) => !expectedVerdicts(op, t, ownerData, c).includes('allowed')).length;
}

/** Runs every operation `pick` selects; returns the tally (failures listed, not thrown). */
export async function runMatrix(m: Matrix, pick: (op: ApiOperation, t: Target) => boolean): Promise<Tally> {
  const decls = productRegistry().all();
  const tally: Tally = {
    operations: 0,
    requests: 0,
    denials: 0,
    minimumDenials: 0,
    leaks: 0,
    skipped: 0,
    stateChecks: 0,
    failures: [],
    unaimed: [],
  };
  const ops = m.operations
    .filter((op) => pick(op, targetOf(op, decls)))
    .sort((a, b) => METHOD_ORDER[a.method] - METHOD_ORDER[b.method] || a.path.localeCompare(b.path));
  for (const op of ops) {
    if (SKIPPED.some((s) => s.match(op))) {
      tally.skipped++;
      continue;
    }
    tally.operations++;
    const t = targetOf(op, decls);
    tally.minimumDenials += declaredDenials(op, t);
    let req: Request;
    try {
      req = await build(op, t, m.world);
    } catch (e) {
      tally.failures.push(`${op.method} ${op.path}: ${(e as Error).message}`);
      continue;
    }
    if (t.decl?.scope === 'mailbox' && op.auth === 'signed-in' && !op.adminScope && !op.unfiltered && !req.ownerData)
      tally.unaimed.push(`${op.method} ${op.path}`);
    const want = new Map(
      ORDER.map((c) => {
        const v = expectedVerdicts(op, t, req.ownerData, c);
        return [c, req.placeholder && v.includes('allowed') ? [...v, 'absent' as Verdict] : v];
      }),
    );
    // Every caller that must be refused goes first; then the stored state must be as before.
    const callers = [...ORDER.filter((c) => !want.get(c)!.includes('allowed')), ...ORDER.filter((c) => want.get(c)!.includes('allowed'))];
    const before = await stateOf(m, op, t, req);
    let changed = false;
    for (const [i, c] of callers.entries()) {
      const expected = want.get(c)!;
      if (before !== null && expected.includes('allowed') && (i === 0 || !want.get(callers[i - 1])!.includes('allowed'))) {
        const after = await stateOf(m, op, t, req);
        tally.stateChecks++;
        if (after !== before)
          tally.failures.push(
            `${op.method} ${req.url}: a refused caller changed the stored state:\n  before ${before.slice(0, 300)}\n  after  ${after?.slice(0, 300)}`,
          );
      }
      const r = await m.api.call(op.method, req.url, { token: m.world.tokens.get(c), body: req.body, headers: req.headers });
      tally.requests++;
      const got = verdictOf(op, r.status, r.body);
      const matches =
        expected.includes(got as Verdict) ||
        (got === 'forbidden' && expected.some((v) => ['token', 'role', 'elevation', 'acl'].includes(v)));
      if (!matches)
        tally.failures.push(
          `${c} ${op.method} ${req.url} [${op.auth}${req.ownerData ? ', owner data' : ''}]: ${r.status} ${JSON.stringify(r.body)?.slice(0, 160)}; expected ${expected.join(' or ')}`,
        );
      else if (!expected.includes('allowed')) tally.denials++;
      if (got === 'allowed' && op.method !== 'GET' && op.method !== 'HEAD' && r.status < 300) changed = true;
      if (c !== 'owner' && c !== 'reader') {
        // What the caller sent and the answer echoes is not disclosed to him (a uid in a bulk result, in a 400).
        const sent = `${req.url} ${typeof req.body === 'string' ? req.body : JSON.stringify(req.body ?? '')}`;
        const leaked = leaksIn(op, c, answerText(r.body, r.headers), m.world).filter((k) => !markersIn(sent, m.world).includes(k));
        if (leaked.length) {
          tally.leaks++;
          tally.failures.push(`LEAK ${c} ${op.method} ${req.url} (${r.status}) shows the owner's ${leaked.join(', ')}`);
        }
      }
    }
    if (changed) await m.world.revalidate(t.decl?.name ?? op.path.split('/')[3]);
  }
  return tally;
}
