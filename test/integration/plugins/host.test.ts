// The plugin host with real plugins, a real protocols app and a real database: a throwing plugin
// is contained; the scoped host API checks access with trusted roles stripped, sends through the
// common send path and feeds the mail event stream; settings are scoped to the manifest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderModel, MessageModel, type Folder, type Message } from '../../../lib/mail/index.js';
import { autodiscoverPlugin } from '../../../lib/plugins/index.js';
import { OutboundJobModel } from '../../../lib/send/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { deliverRaw } from '../../helpers/messages.js';
import { request, seed, startStack, type Stack } from './_stack.js';
import { mailSeen, TEST_PLUGINS } from './_plugins.js';

const backends = await sqlBackends();

describe.each(backends.map((b) => [b.name, b] as const))('plugin host on %s', (_name, backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  const eas = (cmd: string, token: string | null, opts: { query?: string; body?: string } = {}) =>
    request(`${stack.protocols}/Vendor-Server-ActiveSync?Cmd=${cmd}${opts.query ?? ''}`, { method: 'POST', token, body: opts.body ?? '' });
  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [autodiscoverPlugin, ...TEST_PLUGINS] });
    s = await seed(stack);
  }, 60_000);
  afterAll(async () => stack?.close());

  describe('a plugin that throws is contained', () => {
    it.each(['/mapi/boom', '/mapi/boom-async', '/mapi/boom-answer'])(
      '%s: 500 with the generic body, no internals; the next request is fine',
      async (path) => {
        const r = await request(stack.protocols + path);
        expect(r.status).toBe(500);
        expect(r.json).toEqual({ code: 'api-199', status: 500, message: 'Internal error' });
        expect(r.text).not.toMatch(/secret internal detail|TypeError|at /);
        const next = await request(`${stack.protocols}/mapi/fine`);
        expect(next.status).toBe(200);
        expect(next.json).toEqual({ fine: true });
        expect((await request(`${stack.protocols}/protocols/status`)).status).toBe(200);
      },
    );

    it('a plugin whose start hook throws stays unloaded: its routes 404, its protocols unadvertised, the others serve', async () => {
      expect(stack.host.loaded('test-broken')).toBe(false);
      expect((await request(`${stack.protocols}/mapi/broken`)).status).toBe(404);
      expect((await stack.host.advertised()).map((p) => `${p.plugin}:${p.name}`).sort()).toEqual([
        'autodiscover:AutodiscoverV1',
        'test-eas:ActiveSync',
        'test-mapi:mapiHttp',
      ]);
      const status = (await request(`${stack.protocols}/protocols/status`)).json;
      expect(status.plugins.find((p: { name: string }) => p.name === 'test-broken')).toMatchObject({ loaded: false, enabled: true });
      // The api daemon still lists it (it is installed) with its stored state.
      expect((await stack.call('GET', '/api/system/plugins/test-broken', s.admin)).body).toMatchObject({
        name: 'test-broken',
        enabled: true,
      });
    });
  });

  describe('the scoped host API', () => {
    it("needs a signed-in caller on authenticated routes (401 api-100), and resolves the caller's own mailbox", async () => {
      expect((await eas('whoami', null)).json).toMatchObject({ code: 'api-100', status: 401 });
      const r = await eas('whoami', s.alice);
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ uid: 'alice', elevatedAt: null, mailbox: { uid: s.aliceBox, address: 'alice@example.test' } });
    });

    it("strips trusted roles: an elevated administrator has no mailbox and cannot reach alice's by address (404)", async () => {
      expect((await eas('whoami', s.admin)).json).toMatchObject({ code: 'api-107', status: 404 });
      expect((await eas('whoami', s.admin, { query: '&address=alice@example.test' })).json).toMatchObject({ code: 'api-107' });
      const folders = await eas('folders', s.admin, { query: `&mailboxUid=${s.aliceBox}` });
      expect(folders.status).toBe(404);
      expect(folders.text).not.toContain('Inbox');
      // bob, a stranger, the same
      expect((await eas('folders', s.bob, { query: `&mailboxUid=${s.aliceBox}` })).status).toBe(404);
    });

    it("lists folders and messages and reads a message's source for the owner", async () => {
      const folders = (await eas('folders', s.alice, { query: `&mailboxUid=${s.aliceBox}` })).json as Array<{ uid: string; role: string }>;
      expect(folders.map((f) => f.role).sort()).toEqual(['archive', 'drafts', 'inbox', 'junk', 'outbox', 'sent', 'trash']);
      const inbox = folders.find((f) => f.role === 'inbox')!;
      expect((await eas('messages', s.alice, { query: `&folderUid=${inbox.uid}` })).json).toEqual([]);
      expect((await eas('messages', s.bob, { query: `&folderUid=${inbox.uid}` })).status).toBe(404);
    });

    it('subscribes to push channels only where the caller may read', async () => {
      expect((await eas('subscribe', s.alice, { query: `&channel=${s.aliceBox}` })).json).toEqual({ subscribed: s.aliceBox });
      expect((await eas('subscribe', s.bob, { query: `&channel=${s.aliceBox}` })).status).toBe(404);
      expect((await eas('subscribe', s.alice, { query: '&channel=no-such-uid' })).status).toBe(404);
    });

    it('reads after an event it is told of see what the event announces (its earlier reads are not served again)', async () => {
      const folders = (await eas('folders', s.alice, { query: `&mailboxUid=${s.aliceBox}` })).json as Array<{ uid: string; role: string }>;
      const inbox = folders.find((f) => f.role === 'inbox')!.uid;
      let answered = false;
      const pending = eas('keys-across-event', s.alice, { query: `&folderUid=${inbox}` }).finally(() => (answered = true));
      // Mail until the request answers: the first one filed after it subscribed wakes it.
      for (let n = 0; !answered && n < 20; n++) {
        await new Promise((r) => setTimeout(r, 250));
        if (!answered)
          await deliverRaw(
            { deps: stack.deps } as never,
            s.aliceBox,
            `Subject: wake ${n}\r\nFrom: c@example.net\r\nTo: alice@example.test\r\n\r\nx\r\n`,
          );
      }
      const { before, after } = (await pending).json as { before: number; after: number };
      expect(after).toBeGreaterThan(before);
    });

    it('writes a record over the version it was read at only (api-108 over a stale one), or over whatever version it is now', async () => {
      expect((await eas('contact-versions', s.alice)).json).toEqual({ first: 'first', stale: 'api-108', latest: ['first', 'any version'] });
    });

    it("sends through the common send path: Sent Items, the Outbox record, message.sent to the plugin's mail hook", async () => {
      const raw = [
        'From: alice@example.test',
        'To: bob@example.test',
        'Subject: via the plugin',
        `Message-ID: <plugin-${Date.now()}@example.test>`,
        'MIME-Version: 1.0',
        'Content-Type: text/plain',
        '',
        'Hello from a plugin.',
        '',
      ].join('\r\n');
      const r = await eas('send', s.alice, { body: raw });
      expect(r.status, r.text).toBe(200);
      expect(r.json.accepted).toEqual(['bob@example.test']);
      const sent = await stack.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid: s.aliceBox, role: 'sent' });
      const inSent = await stack.deps.store.repo<Message>(MessageModel).list({ filter: { folderUid: sent!.uid }, limit: 10 });
      expect(inSent.map((m) => m.subject)).toContain('via the plugin');
      expect(await stack.deps.store.repo(OutboundJobModel).get(r.json.uid)).toMatchObject({ mailboxUid: s.aliceBox });
      await expect.poll(() => mailSeen.some((p) => p.mailboxUid === s.aliceBox)).toBe(true);
      // A From the caller may not use is refused by the same path (403 api-102).
      const forged = await eas('send', s.alice, { body: raw.replace('From: alice@', 'From: bob@') });
      expect(forged.json).toMatchObject({ code: 'api-102', status: 403 });
    });

    it('a plugin reads only the settings its manifest names; reading another is a contained failure', async () => {
      const r = await eas('undeclared-setting', s.alice);
      expect(r.status).toBe(500);
      expect(r.json).toEqual({ code: 'api-199', status: 500, message: 'Internal error' });
    });

    it('routes under /api/mail/<plugin> are served by the api daemon, signed in', async () => {
      expect(await stack.call('GET', '/api/mail/test-api/whoami', s.alice)).toEqual({
        status: 200,
        body: { mailbox: 'alice@example.test' },
      });
      expect((await stack.call('GET', '/api/mail/test-api/whoami', null)).body).toMatchObject({ code: 'api-100' });
      expect((await stack.call('PUT', '/api/system/plugins/test-api', s.admin, { enabled: false })).status).toBe(200);
      expect(await stack.call('GET', '/api/mail/test-api/whoami', s.alice)).toMatchObject({ status: 404, body: { code: 'api-107' } });
      await stack.call('PUT', '/api/system/plugins/test-api', s.admin, { enabled: true });
    });
  });
});
