// Real plugin modules for the tests: they go through definePlugin and the host exactly like the
// shipped ones. test-eas and test-mapi stand in for the mobile-sync and MAPI plugins (which do not
// exist yet) so Autodiscover has protocols to advertise; test-eas also drives the host API.
import { definePlugin, type PluginManifest, type PluginRoute } from '../../../lib/plugins/index.js';

export const mailSeen: Array<Record<string, unknown>> = [];

const doc = (operationId: string): PluginRoute['doc'] => ({
  operationId,
  summary: `test route ${operationId}`,
  tags: ['test'],
  responses: { 200: { description: 'ok' } },
});

export const testEas = definePlugin({
  name: 'test-eas',
  version: '0.0.1',
  summary: 'stands in for the mobile-sync plugin',
  settings: [],
  protocols: [{ name: 'ActiveSync', endpoints: { url: '/Vendor-Server-ActiveSync' } }],
  hooks: {
    mail: {
      'message.sent': (payload) => {
        mailSeen.push(payload);
      },
    },
  },
  routes: [
    {
      method: 'options',
      path: '/Vendor-Server-ActiveSync',
      auth: 'none',
      doc: doc('test_eas_options'),
      handle: () => ({ status: 200, headers: { 'ms-asprotocolversions': '14.0,14.1,16.0,16.1' } }),
    },
    {
      // One route that exercises the scoped host API, command by command (like ?Cmd= in mobile sync).
      method: 'post',
      path: '/Vendor-Server-ActiveSync',
      auth: 'basic-or-token',
      body: { type: 'raw', limit: 1024 * 1024 },
      doc: doc('test_eas_post'),
      async handle(req, { host, caller }) {
        const q = (k: string) => String(req.query[k] ?? '');
        const me = caller!;
        switch (q('Cmd')) {
          case 'whoami':
            return {
              status: 200,
              body: { uid: me.principal.uid, elevatedAt: me.principal.elevatedAt, mailbox: await me.mailbox(q('address') || undefined) },
            };
          case 'folders':
            return { status: 200, body: await me.folders(q('mailboxUid')) };
          case 'messages':
            return { status: 200, body: await me.messages(q('folderUid')) };
          case 'raw':
            return { status: 200, headers: { 'content-type': 'message/rfc822' }, body: await me.rawMessage(q('uid')) };
          case 'send': {
            const box = await me.mailbox();
            const r = await me.sendRaw(box.uid as string, req.body as Buffer);
            return { status: r.status, body: r.body };
          }
          case 'subscribe': {
            const stop = await me.subscribe(q('channel'), () => undefined);
            stop();
            return { status: 200, body: { subscribed: q('channel') } };
          }
          case 'keys-across-event': {
            // A folder's keys, then again once an event of the folder arrived (or after 10 s).
            const folder = q('folderUid');
            const before = (await me.folderKeys(folder)).size;
            let woke = () => undefined as void;
            const event = new Promise<void>((r) => (woke = r));
            const stop = await me.subscribe(folder, () => woke());
            const timer = setTimeout(woke, 10_000);
            await event;
            clearTimeout(timer);
            stop();
            return { status: 200, body: { before, after: (await me.folderKeys(folder)).size } };
          }
          case 'contact-versions': {
            // A contact changed twice: once over the version it was read at, once over that stale version again.
            const contacts = me.records('contacts');
            const made = await contacts.create({ mailboxUid: (await me.mailbox()).uid, fn: 'Versioned' });
            const first = await contacts.update(String(made.uid), { title: 'first' }, Number(made.version));
            const stale = await contacts.update(String(made.uid), { title: 'second' }, Number(made.version)).then(
              () => 'written',
              (e: { code?: string }) => e.code,
            );
            const latest = await contacts.update(String(made.uid), { note: 'any version' });
            return { status: 200, body: { first: first.title, stale, latest: [latest.title, latest.note] } };
          }
          case 'undeclared-setting':
            return { status: 200, body: { value: host.setting('mail:autodiscover:public_url') } };
          default:
            return { status: 400, body: { error: 'unknown Cmd' } };
        }
      },
    },
  ],
});

export const testMapi = definePlugin({
  name: 'test-mapi',
  version: '0.0.1',
  summary: 'stands in for the MAPI over HTTP plugin',
  settings: [],
  protocols: [{ name: 'mapiHttp', endpoints: { emsmdb: '/mapi/emsmdb/', nspi: '/mapi/nspi/' } }],
  routes: [
    // Echoes what the protocols daemon saw, so the front-door test can check what was forwarded.
    {
      method: 'post',
      path: '/mapi/emsmdb',
      auth: 'none',
      body: { type: 'raw', limit: 4 * 1024 * 1024 },
      doc: doc('test_mapi_emsmdb'),
      handle: (req) => ({
        status: 200,
        headers: { 'x-seen-ip': req.ip, 'set-cookie': 'MapiContext=abc; Path=/mapi' },
        body: {
          bytes: (req.body as Buffer).length,
          query: req.query,
          type: req.headers['content-type'] ?? null,
          proto: req.headers['x-forwarded-proto'] ?? null,
        },
      }),
    },
  ],
});

export const testBoom = definePlugin({
  name: 'test-boom',
  version: '0.0.1',
  summary: 'throws in every way a handler can',
  settings: [],
  protocols: [],
  routes: [
    {
      method: 'get',
      path: '/mapi/boom',
      auth: 'none',
      doc: doc('test_boom_sync'),
      handle: () => {
        throw new Error('boom: a secret internal detail');
      },
    },
    {
      method: 'get',
      path: '/mapi/boom-async',
      auth: 'none',
      doc: doc('test_boom_async'),
      handle: async () => {
        await new Promise((r) => setTimeout(r, 5));
        throw new TypeError('async boom');
      },
    },
    { method: 'get', path: '/mapi/boom-answer', auth: 'none', doc: doc('test_boom_answer'), handle: () => ({ nope: true }) as never },
    { method: 'get', path: '/mapi/fine', auth: 'none', doc: doc('test_boom_fine'), handle: () => ({ status: 200, body: { fine: true } }) },
  ],
});

export const testBrokenStart = definePlugin({
  name: 'test-broken',
  version: '0.0.1',
  summary: 'its start hook throws',
  settings: [],
  protocols: [{ name: 'mapiHttp', endpoints: { emsmdb: '/mapi/broken/', nspi: '/mapi/broken/' } }],
  hooks: {
    start: () => {
      throw new Error('cannot start');
    },
  },
  routes: [
    {
      method: 'get',
      path: '/mapi/broken',
      auth: 'none',
      doc: doc('test_broken'),
      handle: () => ({ status: 200, body: 'should never answer' }),
    },
  ],
});

/** A route under /api/mail/<plugin>: served by the api daemon. */
export const testApiRoute = definePlugin({
  name: 'test-api',
  version: '0.0.1',
  summary: 'a convention route under /api/mail/test-api',
  settings: [],
  protocols: [],
  routes: [
    {
      method: 'get',
      path: '/api/mail/test-api/whoami',
      auth: 'signed-in',
      doc: doc('test_api_whoami'),
      handle: async (_req, { caller }) => ({ status: 200, body: { mailbox: (await caller!.mailbox()).address } }),
    },
  ],
});

export const TEST_PLUGINS: PluginManifest[] = [testEas, testMapi, testBoom, testBrokenStart, testApiRoute];
