// The people and the data of the authorization matrix: alice owns a mailbox full of marked records,
// carol reads it through a read-only share, bob is another user, root is an administrator in every
// elevation state. Fixtures are made on first use through the API (so they are what a client would
// make) and remade when an allowed call removed them.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import z32 from 'z32';
import { QuarantineModel } from '../../../lib/ingest/index.js';
import { storeRaw } from '../../../lib/mail/index.js';
import type { ResourceDecl } from '../../../lib/resources/index.js';
import { pathOf } from '../../../lib/resources/index.js';
import { seedUsers, type TestApi } from '../../helpers/api.js';
import { deliverRaw } from '../../helpers/messages.js';
import type { CallerKind, SchemaObject } from './operations.js';
import { PLACEHOLDER_PARAMS, STALE_VERSION, sample } from './requests.js';

export const INGEST_SECRET = 'matrix-ingest-secret-0123456789';
type Ids = { mailbox: string; inbox: string; spare: string };
type Param = { value: string; owner: boolean; placeholder?: boolean };

/** Create bodies that work (the owner's create must succeed); anything else is sampled from its schema. */
const CREATE_BODIES: Record<string, (ids: Ids, m: string, w: World) => Promise<Record<string, unknown>> | Record<string, unknown>> = {
  folders: (i, m) => ({ mailboxUid: i.mailbox, name: `${m}-${Math.random().toString(36).slice(2, 8)}` }),
  labels: (i, m) => ({ mailboxUid: i.mailbox, name: `${m}-${Math.random().toString(36).slice(2, 8)}` }),
  'mail-filter-rules': (i, m) => ({ mailboxUid: i.mailbox, name: m, actions: [{ type: 'markRead' }] }),
  'mail-signatures': (i, m) => ({ mailboxUid: i.mailbox, name: 'sig', text: m }),
  'focused-inbox-overrides': (i) => ({
    mailboxUid: i.mailbox,
    sender: `s${Math.random().toString(36).slice(2, 8)}@example.net`,
    classification: 'other',
  }),
  'preferences/appearance': (i) => ({ mailboxUid: i.mailbox, theme: 'dark' }),
  'calendar-events': (i, m) => ({ mailboxUid: i.mailbox, summary: m, start: '2026-12-01T10:00:00Z', end: '2026-12-01T11:00:00Z' }),
  'calendar-share-links': (i, m) => ({ mailboxUid: i.mailbox, name: m }),
  contacts: (i, m) => ({ mailboxUid: i.mailbox, fn: m }),
  'contact-lists': (i, m) => ({ mailboxUid: i.mailbox, name: m }),
  notes: (i, m) => ({ mailboxUid: i.mailbox, title: m }),
  'task-lists': (i, m) => ({ mailboxUid: i.mailbox, name: m }),
  tasks: async (i, m, w) => ({ mailboxUid: i.mailbox, taskListUid: await w.fixture('task-lists'), title: m }),
  'data-export-requests': (i) => ({ mailboxUid: i.mailbox }),
  domains: () => ({ name: `matrix-${Math.random().toString(36).slice(2, 8)}.test` }),
  'distribution-lists': () => ({ address: `team-${Math.random().toString(36).slice(2, 8)}@example.test`, members: ['bob@example.test'] }),
  'transport-rules': () => ({ name: 'matrix', action: 'addHeader', headerName: 'X-Matrix', headerValue: 'on' }),
  // Erasure is aimed at a spare mailbox: the matrix must not erase the data it searches for.
  'erasure-requests': (i) => ({ mailboxUid: i.spare, reason: 'matrix' }),
  scopes: (_i, _m, w) => ({ name: 'matrix scope', certificatePem: w.scopeCert, holders: ['root', 'h2', 'h3'], approvalsRequired: 2 }),
  matters: async (i, _m, w) => ({
    name: 'matrix matter',
    scopeUid: await w.fixture('scopes'),
    custodians: [i.mailbox],
    from: '2020-01-01T00:00:00Z',
    to: '2030-01-01T00:00:00Z',
  }),
  'access-requests': async (_i, _m, w) => ({ matterUid: await w.fixture('matters'), reason: 'matrix' }),
  'matter-export-requests': async (_i, _m, w) => ({ accessRequestUid: await w.fixture('access-requests') }),
  'impersonation-sessions': (i) => ({ mailboxUid: i.mailbox, reason: 'matrix' }),
};

export class World {
  readonly markers = { content: 'ALICE-SECRET-7f3a', body: 'ALICE-BODY-c41d', address: 'alice@example.test', mailbox: '' };
  ids!: Ids;
  tokens = new Map<CallerKind, string | null>();
  scopeCert = '';
  readonly #fixtures = new Map<string, { uid: string; owner: boolean }>();
  readonly #pending = new Map<string, Promise<string>>();
  #decls = new Map<string, ResourceDecl>();
  #plugin = 'autodiscover';

  constructor(
    readonly api: TestApi,
    decls: readonly ResourceDecl[],
  ) {
    for (const d of decls) this.#decls.set(d.name, d);
  }

  async setup(): Promise<void> {
    const api = this.api;
    const p = await seedUsers(api);
    const inbox = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}&role=inbox`, { token: p.alice })).body[0].uid;
    const spare = await api.call('POST', '/api/mail/mailboxes', {
      token: p.admin,
      body: { address: 'zed@example.test', owners: ['zed'], name: 'zed' },
    });
    this.ids = { mailbox: p.aliceBox.uid, inbox, spare: spare.body.uid };
    this.markers.mailbox = p.aliceBox.uid;
    const share = await api.call('POST', '/api/acls', {
      token: p.alice,
      body: { resource: 'mailboxes', resourceUid: p.aliceBox.uid, subject: 'user:carol', rights: ['read'] },
    });
    if (share.status !== 201) throw new Error(`share: ${share.status}`);
    const t = (o: Parameters<TestApi['token']>[0]) => api.token(o);
    const entries: Array<[CallerKind, Promise<string> | string | null]> = [
      ['owner', p.alice],
      ['reader', t({ uid: 'carol' })],
      ['other', p.bob],
      ['admin-elevated', p.admin],
      ['admin-not-elevated', t({ uid: 'root', roles: ['admin'] })],
      ['admin-stale', t({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) })],
      ['no-token', null],
      ['bad-signature', t({ uid: 'alice', secret: 'another-secret-0123456789abcdef' })],
      ['wrong-audience', t({ uid: 'alice', audience: 'elsewhere' })],
      ['wrong-issuer', t({ uid: 'alice', issuer: 'elsewhere' })],
      ['expired', t({ uid: 'alice', ttlSeconds: -60 })],
      ['over-long', t({ uid: 'alice', ttlSeconds: 30 * 86_400 })],
      ['elevated-future', t({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() + 3600_000) })],
    ];
    for (const [k, v] of entries) this.tokens.set(k, await v);
    const dir = mkdtempSync(join(tmpdir(), 'svcmail-matrix-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-subj',
        '/CN=matrix',
        '-keyout',
        join(dir, 'k'),
        '-out',
        join(dir, 'c'),
        '-days',
        '30',
      ],
      { stdio: 'ignore' },
    );
    this.scopeCert = readFileSync(join(dir, 'c'), 'utf8');
    rmSync(dir, { recursive: true, force: true });
    // Made before any route runs: the escrow audit log is read by holders only, root among them; the
    // hand-off stops taking even the right secret once the matrix has sent enough wrong ones.
    await this.fixture('scopes');
    await this.fixture('acls');
    await this.fixture('ingest-queue');
    const plugins = await api.call('GET', '/api/system/plugins', { token: p.admin });
    if (Array.isArray(plugins.body) && plugins.body[0]?.name) this.#plugin = plugins.body[0].name;
  }

  get owner(): string {
    return this.tokens.get('owner')!;
  }

  get admin(): string {
    return this.tokens.get('admin-elevated')!;
  }

  /** Uids of the owner's fixtures (a body naming one addresses the owner's data). */
  ownedUids(): string[] {
    return [...this.#fixtures.values()].filter((f) => f.owner).map((f) => f.uid);
  }

  /** A fixture may have been removed by an allowed call: check it and make it again if so. */
  async revalidate(key: string): Promise<void> {
    const f = this.#fixtures.get(key);
    const d = this.#decls.get(key === 'compose' ? 'messages' : key); // a draft is a message
    if (!f || !d) return;
    const r = await this.api.call('GET', `${pathOf(d)}/${f.uid}`, { token: f.owner ? this.owner : this.admin });
    if (r.status === 404) this.#fixtures.delete(key);
  }

  /** The owner's (or for global records the administrator's) current value of one field. */
  async currentValue(d: ResourceDecl, uid: string, field: string): Promise<unknown> {
    const owner = d.scope === 'mailbox';
    const r = await this.api.call('GET', `${pathOf(d)}/${uid}`, { token: owner ? this.owner : this.admin });
    return r.body?.[field] ?? null;
  }

  async createBody(d: ResourceDecl, schema?: SchemaObject): Promise<Record<string, unknown>> {
    const make = CREATE_BODIES[d.name];
    return make ? make(this.ids, this.markers.content, this) : ((await sample(schema, this, { decl: d })) as Record<string, unknown>);
  }

  async fixture(key: string): Promise<string> {
    const have = this.#fixtures.get(key);
    if (have) return have.uid;
    let p = this.#pending.get(key);
    if (!p) {
      p = this.#make(key)
        .then((f) => {
          this.#fixtures.set(key, f);
          return f.uid;
        })
        .finally(() => this.#pending.delete(key));
      this.#pending.set(key, p);
    }
    return p;
  }

  async #make(key: string): Promise<{ uid: string; owner: boolean }> {
    const api = this.api;
    const m = this.markers;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const must = (what: string, r: { status: number; body: any }, ok = 201) => {
      if (r.status !== ok) throw new Error(`matrix fixture ${what}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as { uid: string; token?: string };
    };
    switch (key) {
      case 'mailboxes':
        return { uid: this.ids.mailbox, owner: true };
      case 'messages': {
        // Multipart with one attachment, so the attachment route has something to serve.
        const raw = `From: x@example.net\nTo: ${m.address}\nSubject: ${m.content}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\n${m.body}\n--b\nContent-Type: text/plain; name=n.txt\nContent-Disposition: attachment; filename=n.txt\n\n${m.body}\n--b--\n`;
        return { uid: (await deliverRaw(api, this.ids.mailbox, raw, { folderUid: this.ids.inbox })).uid, owner: true };
      }
      case 'mailbox-import-requests': {
        const r = await api.call('POST', `/api/mail/mailbox-import-requests?mailboxUid=${this.ids.mailbox}`, {
          token: this.owner,
          body: `From: x@example.net\nSubject: ${m.content}\n\n${m.body}\n`,
          headers: { 'content-type': 'message/rfc822' },
        });
        return { uid: must(key, r).uid, owner: true };
      }
      case 'compose':
        return {
          uid: must(
            key,
            await api.call('POST', '/api/mail/compose', {
              token: this.owner,
              body: { mailboxUid: this.ids.mailbox, subject: m.content, text: m.body },
            }),
          ).uid,
          owner: true,
        };
      case 'acls':
        return {
          uid: must(
            key,
            await api.call('POST', '/api/acls', {
              token: this.owner,
              body: { resource: 'mailboxes', resourceUid: this.ids.mailbox, subject: 'user:dave', rights: ['read'] },
            }),
          ).uid,
          owner: true,
        };
      case 'share-token':
        return {
          uid: must(
            key,
            await api.call('GET', `/api/mail/calendar-share-links/${await this.fixture('calendar-share-links')}`, { token: this.owner }),
            200,
          ).token!,
          owner: false,
        };
      case 'audit-log':
        return { uid: await this.#firstOf('/api/mail/audit-log'), owner: false };
      case 'ingest-queue': {
        const res = await fetch(`${api.url}/internal/mta/deliver`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${INGEST_SECRET}`,
            'content-type': 'message/rfc822',
            'x-envelope-from': 'x@example.net',
            'x-envelope-to': m.address,
          },
          body: `From: x@example.net\r\nTo: ${m.address}\r\nSubject: ${m.content}\r\n\r\n${m.body}\r\n`,
        });
        if (res.status !== 202) throw new Error(`matrix fixture ingest-queue: ${res.status}`);
        return { uid: await this.#firstOf('/api/mail/ingest-queue'), owner: false };
      }
      case 'quarantine': {
        // A held message, as the scan job leaves it (no API creates one).
        const raw = Buffer.from(`From: x@example.net\r\nTo: ${m.address}\r\nSubject: ${m.content}\r\n\r\n${m.body}\r\n`);
        const blob = await storeRaw(api.deps, raw);
        const q = await api.deps.store.repo(QuarantineModel).create({
          mailboxUid: this.ids.mailbox,
          entryUid: `matrix-${Date.now()}`,
          rawRef: blob.blobId,
          size: raw.length,
          envelopeFrom: 'x@example.net',
          recipient: m.address,
          from: 'x@example.net',
          subject: m.content,
          reason: 'virus',
          detail: 'EICAR',
          headers: `Subject: ${m.content}\r\n`,
        } as never);
        return { uid: q.uid, owner: false };
      }
      case 'scopes': {
        // The owner's mailbox is assigned to the scope, so a matter can name it as custodian.
        const s = must(
          key,
          await api.call('POST', '/api/escrow/scopes', { token: this.admin, body: await this.createBody(this.#decls.get('scopes')!) }),
        );
        must(
          `${key} assignment`,
          await api.call('POST', `/api/escrow/scopes/${s.uid}/mailboxes`, { token: this.admin, body: { mailboxUid: this.ids.mailbox } }),
        );
        return { uid: s.uid, owner: false };
      }
      case 'access-requests': {
        // A second holder approves (M = 2), so the holders' reads of the matter reach the handler (Spec: Key escrow access).
        const r = must(
          key,
          await api.call('POST', '/api/escrow/access-requests', { token: this.admin, body: await this.createBody(this.#decls.get(key)!) }),
        );
        must(
          `${key} approval`,
          await api.call('POST', `/api/escrow/access-requests/${r.uid}/approve`, {
            token: await api.token({ uid: 'h2', roles: ['admin'], elevated: true }),
          }),
          200,
        );
        return { uid: r.uid, owner: false };
      }
      case 'scope-changes':
        return {
          uid: must(
            key,
            await api.call('POST', `/api/escrow/scopes/${await this.fixture('scopes')}/changes`, {
              token: this.admin,
              body: { approvalsRequired: 3, reason: 'matrix' },
            }),
          ).uid,
          owner: false,
        };
      case 'impersonation-sessions': {
        // Approved by the owner, so the administrator's reads reach the handler (Spec: audited impersonation).
        const s = must(
          key,
          await api.call('POST', '/api/admin/impersonation-sessions', {
            token: this.admin,
            body: { mailboxUid: this.ids.mailbox, reason: 'matrix' },
          }),
        );
        must(
          `${key} approval`,
          await api.call('POST', `/api/mail/mailboxes/${this.ids.mailbox}/impersonation-sessions/${s.uid}/approve`, { token: this.owner }),
          200,
        );
        return { uid: s.uid, owner: false };
      }
    }
    const d = this.#decls.get(key);
    if (!d) throw new Error(`matrix: no fixture for ${key}; teach test/security/matrix/world.ts how to make one`);
    const owner = d.scope === 'mailbox';
    const r = await api.call('POST', pathOf(d), { token: owner ? this.owner : this.admin, body: await this.createBody(d) });
    return { uid: must(key, r).uid, owner };
  }

  async #firstOf(path: string): Promise<string> {
    const r = await this.api.call('GET', `${path}?limit=1`, { token: this.admin });
    if (r.status !== 200 || !r.body[0]) throw new Error(`matrix fixture ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body[0].uid;
  }

  /** A path parameter. */
  async param(name: string, at: { decl: ResourceDecl | null; before: string; path: string }): Promise<Param> {
    switch (name) {
      case 'id': {
        const key = at.decl?.name ?? at.before;
        const uid = await this.fixture(key);
        return { value: uid, owner: this.#fixtures.get(key)?.owner ?? false };
      }
      case 'attachmentId':
        return { value: '1', owner: false };
      case 'mailboxUid':
        return { value: this.ids.mailbox, owner: true };
      case 'changeId':
        return { value: await this.fixture('scope-changes'), owner: false };
      case 'sid':
        return { value: await this.fixture('impersonation-sessions'), owner: false };
      case 'token':
        return { value: await this.fixture('share-token'), owner: false };
      case 'hash':
        return { value: z32.encode(createHash('sha256').update('alice').digest()), owner: false };
      case 'resource':
        return { value: 'messages', owner: false };
      case 'name':
        return { value: this.#plugin, owner: false };
      case 'uid':
        if (at.path.includes('/view/')) return { value: await this.fixture('messages'), owner: false };
    }
    if (PLACEHOLDER_PARAMS[name]) return { value: 'matrix-placeholder', owner: false, placeholder: true };
    throw new Error(`matrix: cannot fill path parameter {${name}} of ${at.path}; add it to World.param or PLACEHOLDER_PARAMS`);
  }

  async queryValue(name: string, schema: SchemaObject, decl: ResourceDecl | null): Promise<Param> {
    switch (name) {
      case 'mailboxUid':
      case 'uid':
        return { value: this.ids.mailbox, owner: true };
      case 'folderUid':
        return { value: this.ids.inbox, owner: true };
      case 'resource':
        return { value: 'mailboxes', owner: false };
      case 'matterUid':
        return { value: await this.fixture('matters'), owner: false };
      case 'from':
        return { value: '2026-01-01T00:00:00Z', owner: false };
      case 'to':
        return { value: '2027-01-01T00:00:00Z', owner: false };
      case 'addr':
        return { value: 'bob@example.test', owner: false, placeholder: true };
      case 'expectedMasterKeyGeneration':
        return { value: '1', owner: false };
      case 'domain':
      case 'name':
        return { value: 'example.test', owner: false };
      case 'rcpt':
        return { value: this.markers.address, owner: false };
      case 'version':
        return { value: String(STALE_VERSION), owner: false };
      case 'filename':
        return { value: 'n.txt', owner: false };
    }
    return { value: String(await sample(schema, this, { decl })), owner: false };
  }

  /** Body fields that name records or versions. */
  async hint(name: string, decl: ResourceDecl | null): Promise<unknown> {
    switch (name) {
      case 'mailboxUid':
        return this.ids.mailbox;
      case 'folderUid':
        return this.ids.inbox;
      case 'taskListUid':
        return this.fixture('task-lists');
      case 'matterUid':
        return this.fixture('matters');
      case 'scopeUid':
        return this.fixture('scopes');
      case 'accessRequestUid':
        return this.fixture('access-requests');
      case 'uid':
        return decl ? this.fixture(decl.name) : undefined;
      case 'version':
        return STALE_VERSION;
      case 'expectedMasterKeyGeneration':
        return 1;
      case 'reason':
        return 'matrix';
      case 'resource':
        return 'mailboxes';
      case 'resourceUid':
        return this.ids.mailbox;
      case 'subject':
        return 'user:erin'; // not dave: the acls fixture is dave's entry
      case 'owners':
        return ['alice']; // a mailbox's owners set as they are: the owner keeps the mailbox for the operations after
    }
    return undefined;
  }
}
