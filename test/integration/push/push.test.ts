// Spec: Events (Push WebSocket) and Authentication (Carrying the token): real api and push daemons
// in separate processes over the embedded hub, real ws clients.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Client, ORIGIN, seed, startStack, type Stack } from './_stack.js';

let stack: Stack;
let s: Awaited<ReturnType<typeof seed>>;

beforeAll(async () => {
  stack = await startStack({ copies: 2, values: { 'mail:push:recheck_ms': 400, 'mail:push:login_timeout_ms': 1500 } });
  s = await seed(stack);
}, 60_000);
afterAll(async () => stack?.close());

const isMessage =
  (channel: string, pred: (d: { type: string; action: string; data: Record<string, unknown> }) => boolean = () => true) =>
  (f: { type: string; channel?: string; data?: unknown }) =>
    f.type === 'MESSAGE' && f.channel === channel && pred(f.data as never);

describe('/push: signing in', () => {
  it('refuses an Origin outside cors:origins (403) and accepts the configured one', async () => {
    await expect(Client.open(stack.push[0].url, { token: s.alice, origin: 'https://evil.test' })).rejects.toThrow('HTTP 403');
    const ok = await Client.open(stack.push[0].url, { token: s.alice, origin: ORIGIN });
    expect((await ok.next((f) => f.type === 'LOGGED_IN')).data).toMatchObject({ uid: 'alice' });
    ok.close();
  });

  it("accepts the service's own pages (an Origin naming the host asked) without a cors:origins entry, and no look-alike", async () => {
    const { host } = new URL(stack.push[0].url);
    const own = await Client.open(stack.push[0].url, { token: s.alice, origin: `http://${host}` });
    expect((await own.next((f) => f.type === 'LOGGED_IN')).data).toMatchObject({ uid: 'alice' });
    own.close();
    const port = Number(new URL(stack.push[0].url).port);
    for (const origin of [`http://${host}.evil.test`, `http://127.0.0.1:${port + 1}`, `http://evil.test/${host}`, 'null'])
      await expect(Client.open(stack.push[0].url, { token: s.alice, origin }), origin).rejects.toThrow('HTTP 403');
  });

  it('refuses a bad token at the upgrade (401 for expired, 403 for a foreign signature) and a token in the query string', async () => {
    const expired = await stack.token({ uid: 'alice', ttlSeconds: -10 });
    await expect(Client.open(stack.push[0].url, { token: expired })).rejects.toThrow('HTTP 401');
    const foreign = await stack.token({ uid: 'alice', secret: 'another-secret-0123456789abcdef' });
    await expect(Client.open(stack.push[0].url, { cookie: foreign })).rejects.toThrow('HTTP 403');
    const ws = new WebSocket(`${stack.push[0].url.replace('http', 'ws')}/push?access_token=${s.alice}`);
    const c = new Client(ws);
    await expect(c.opened).rejects.toThrow('HTTP 401');
  });

  it('signs in with the jwt cookie', async () => {
    const c = await Client.open(stack.push[0].url, { cookie: s.bob });
    expect(await c.subscribe([s.bobInbox.uid])).toEqual(['bob', s.bobInbox.uid]);
    c.close();
  });

  it('signs in with a first LOGIN frame; before it nothing is subscribed, a bad LOGIN closes 4401', async () => {
    const c = await Client.open(stack.push[0].url);
    c.send({ id: 1, type: 'SUBSCRIBE', data: [s.aliceInbox.uid] });
    expect((await c.next((f) => f.id === 1)).data).toMatchObject({ code: 'api-100' });
    c.send({ id: 2, type: 'LOGIN', data: s.alice });
    expect(await c.next((f) => f.id === 2)).toMatchObject({ type: 'LOGGED_IN', data: { uid: 'alice' } });
    expect(await c.subscribe([s.aliceInbox.uid])).toEqual(['alice', s.aliceInbox.uid]);
    c.close();

    const bad = await Client.open(stack.push[0].url);
    bad.send({ type: 'LOGIN', data: 'not-a-token' });
    expect((await bad.closed).code).toBe(4401);
  });

  it('closes a socket that never sends LOGIN within the login timeout', async () => {
    const c = await Client.open(stack.push[0].url);
    expect(await c.closed).toMatchObject({ code: 4401, reason: 'LOGIN expected' });
  });

  it('closes the socket when the token expires (4401)', async () => {
    const short = await stack.token({ uid: 'alice', ttlSeconds: 2 });
    const c = await Client.open(stack.push[0].url, { token: short });
    expect(await c.subscribe([s.aliceInbox.uid])).toContain(s.aliceInbox.uid);
    expect(await c.closed).toMatchObject({ code: 4401, reason: 'token expired' });
  });
  it("a LOGIN with a newer token of the same user renews the socket; another user's token is refused", async () => {
    const short = await stack.token({ uid: 'alice', ttlSeconds: 2 });
    const c = await Client.open(stack.push[0].url, { token: short });
    c.send({ id: 7, type: 'LOGIN', data: await stack.token({ uid: 'bob' }) });
    expect((await c.next((f) => f.id === 7)).data).toMatchObject({ code: 'api-101' });
    c.send({ id: 8, type: 'LOGIN', data: await stack.token({ uid: 'alice', ttlSeconds: 600 }) });
    expect(await c.next((f) => f.id === 8)).toMatchObject({ type: 'LOGGED_IN', data: { uid: 'alice' } });
    await new Promise((r) => setTimeout(r, 2600));
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
    c.close();
  });
});

describe('/push: channels and events', () => {
  it('a change through the API reaches subscribed clients of both push copies and through the api front door', async () => {
    const created = await stack.call('POST', '/api/mail/folders', s.alice, { mailboxUid: s.aliceBox, name: 'Projects' });
    expect(created.status).toBe(201);
    const uid = created.body.uid as string;
    const clients = [
      await Client.open(stack.push[0].url, { token: s.alice }),
      await Client.open(stack.push[1].url, { token: s.alice }),
      await Client.open(stack.api.url, { token: s.alice }), // the front door forwards to push copy 0
    ];
    for (const c of clients) expect(await c.subscribe([uid])).toEqual(['alice', uid]);
    const mailboxOnly = await Client.open(stack.push[0].url, { token: s.alice });
    expect(await mailboxOnly.subscribe([s.aliceBox])).toEqual(['alice', s.aliceBox]);

    const renamed = await stack.call('PUT', `/api/mail/folders/${uid}`, s.alice, { name: 'Projects 2027', version: created.body.version });
    expect(renamed.status).toBe(200);
    for (const c of clients) {
      const f = await c.next(isMessage(uid));
      // Spec: Events 3 and 7 — exactly {type, channel, data: {type, action, data}}, folder counts included.
      expect(Object.keys(f).sort()).toEqual(['channel', 'data', 'type']);
      expect(Object.keys(f.data as object).sort()).toEqual(['action', 'data', 'type']);
      expect(f.data).toMatchObject({
        type: 'folder',
        action: 'update',
        data: { uid, mailboxUid: s.aliceBox, name: 'Projects 2027', unreadCount: 0, totalCount: 0 },
      });
    }
    const removed = await stack.call('DELETE', `/api/mail/folders/${uid}?version=${renamed.body.version}`, s.alice);
    expect(removed.status).toBe(204);
    expect((await clients[1].next(isMessage(uid, (d) => d.action === 'delete'))).data).toMatchObject({
      type: 'folder',
      action: 'delete',
      data: { uid },
    });
    // Spec: Events 4 — a mailbox subscription does not include its folders' events.
    await expect(mailboxOnly.next((f) => f.type === 'MESSAGE', 300)).rejects.toThrow('no matching frame');
    [...clients, mailboxOnly].forEach((c) => c.close());
  });

  it('events published by another process (as the worker does) reach clients of both push copies', async () => {
    const { createEventBus } = await import('../../../lib/events/index.js');
    const bus = await createEventBus(stack.config);
    expect(bus.transport.name).toBe('hub');
    for (const d of stack.push) expect(await (await fetch(`${d.url}/push/status`)).json()).toMatchObject({ transport: 'hub' });
    try {
      const a = await Client.open(stack.push[0].url, { token: s.bob });
      const b = await Client.open(stack.push[1].url, { token: s.bob });
      for (const c of [a, b]) await c.subscribe([s.bobInbox.uid]);
      bus.publish([s.bobInbox.uid], {
        type: 'folder',
        action: 'update',
        data: { uid: s.bobInbox.uid, mailboxUid: s.bobBox, unreadCount: 3, totalCount: 9 },
      });
      for (const c of [a, b]) {
        const f = await c.next(isMessage(s.bobInbox.uid));
        expect(f.data).toEqual({
          type: 'folder',
          action: 'update',
          data: { uid: s.bobInbox.uid, mailboxUid: s.bobBox, unreadCount: 3, totalCount: 9 },
        });
      }
      // Spec: Events 6 — no replay: a socket opened after the event does not get it.
      const late = await Client.open(stack.push[0].url, { token: s.bob });
      await late.subscribe([s.bobInbox.uid]);
      await expect(late.next(isMessage(s.bobInbox.uid), 300)).rejects.toThrow('no matching frame');
      // Spec: Events 8 — send events on the mailbox and the folder channels.
      const { publishSendEvent } = await import('../../../lib/events/index.js');
      await late.subscribe([s.bobBox]);
      publishSendEvent(bus, 'send-failed', {
        mailboxUid: s.bobBox,
        folderUids: [s.bobInbox.uid],
        messageUid: 'm1',
        data: { refused: ['x@y.test'] },
      });
      expect((await late.next(isMessage(s.bobBox, (d) => d.type === 'send-failed'))).data).toMatchObject({
        type: 'send-failed',
        data: { messageUid: 'm1', mailboxUid: s.bobBox },
      });
      expect((await a.next(isMessage(s.bobInbox.uid, (d) => d.type === 'send-failed'))).data).toMatchObject({ type: 'send-failed' });
      [a, b, late].forEach((c) => c.close());
    } finally {
      await bus.close();
    }
  });

  it("an elevated administrator is not granted another user's mailbox or folder", async () => {
    const c = await Client.open(stack.push[0].url, { token: s.admin });
    expect(await c.subscribe([s.aliceBox, s.aliceInbox.uid, 'no-such-uid'])).toEqual(['root']);
    const other = await Client.open(stack.push[0].url, { token: s.bob });
    expect(await other.subscribe([s.aliceBox, s.aliceInbox.uid])).toEqual(['bob']);
    [c, other].forEach((x) => x.close());
  });

  it("UNSUBSCRIBE drops a channel (never the user's own uid) and its events stop", async () => {
    const c = await Client.open(stack.push[0].url, { token: s.alice });
    await c.subscribe([s.aliceBox]);
    c.send({ id: 40, type: 'UNSUBSCRIBE', data: [s.aliceBox, 'alice'] });
    expect(await c.next((f) => f.id === 40)).toMatchObject({ type: 'UNSUBSCRIBED', data: [s.aliceBox] });
    const box = await stack.call('GET', `/api/mail/mailboxes/${s.aliceBox}`, s.alice);
    expect(
      (
        await stack.call('PUT', `/api/mail/mailboxes/${s.aliceBox}`, s.alice, {
          version: box.body.version,
          safeSenders: ['a@remote.example'],
        })
      ).status,
    ).toBe(200);
    await expect(c.next((f) => f.type === 'MESSAGE', 400)).rejects.toThrow('no matching frame');
    c.close();
  });

  it('losing a share closes the socket within one recheck period', async () => {
    const share = await stack.call('POST', '/api/acls', s.alice, {
      resource: 'mailboxes',
      resourceUid: s.aliceBox,
      subject: 'user:bob',
      rights: ['read'],
    });
    expect(share.status).toBe(201);
    const c = await Client.open(stack.push[1].url, { token: s.bob });
    expect(await c.subscribe([s.aliceBox, s.aliceInbox.uid])).toEqual(['bob', s.aliceBox, s.aliceInbox.uid]);
    await new Promise((r) => setTimeout(r, 600)); // rechecks pass while the share holds
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
    const removed = await stack.call('DELETE', `/api/acls/${share.body.uid}?version=${share.body.version}`, s.alice);
    expect(removed.status).toBe(204);
    // only the periodic recheck closes a socket for lost access; nothing else sends 4403 here
    expect(await c.closed).toMatchObject({ code: 4403, reason: 'access lost' });
    const again = await Client.open(stack.push[1].url, { token: s.bob });
    expect(await again.subscribe([s.aliceBox, s.aliceInbox.uid])).toEqual(['bob']);
    again.close();
  });
});
