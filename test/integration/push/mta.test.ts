// Spec: Events 7 and 9 — a message handed to /internal/mta/deliver is filed by the worker daemon
// (its own process) and the folder update with the new counts reaches subscribed clients of both
// push copies over the shared event channel. Real api, worker and push daemons.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, freePort, seed, startStack, type Stack } from './_stack.js';

const WORKER = fileURLToPath(new URL('../../../bin/svcmail-worker.js', import.meta.url));
const INGEST_SECRET = 'push-ingest-secret-0123456789abcdef';

describe('/internal/mta → worker → /push', () => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let worker: ChildProcess;

  beforeAll(async () => {
    stack = await startStack({
      copies: 2,
      values: {
        'mail:transport:ingest:secret': INGEST_SECRET,
        'mail:jobs:scan:interval_seconds': 0.3,
        // Unreachable scanners count as clean under NODE_ENV=test.
        'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
        'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
        'mail:scan:timeout_ms': 500,
      },
    });
    s = await seed(stack);
    worker = spawn(process.execPath, [WORKER, '--config', stack.configFile], {
      env: { ...process.env, NODE_ENV: 'test', NOTIFY_SOCKET: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }, 60_000);
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const gone = new Promise((r) => worker.once('exit', r));
      worker.kill('SIGTERM');
      await gone;
    }
    await stack?.close();
  });

  it('a delivered message produces a folder update with the new counts on clients of both push copies', async () => {
    const clients = [await Client.open(stack.push[0].url, { token: s.alice }), await Client.open(stack.push[1].url, { token: s.alice })];
    for (const c of clients) expect(await c.subscribe([s.aliceInbox.uid])).toEqual(['alice', s.aliceInbox.uid]);
    const raw = `From: Sender <sender@remote.example>\r\nTo: alice@example.test\r\nSubject: Push me\r\nMessage-ID: <push-${Date.now()}@remote.example>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello\r\n`;
    const res = await fetch(`${stack.api.url}/internal/mta/deliver`, {
      method: 'POST',
      body: raw,
      headers: {
        authorization: `Bearer ${INGEST_SECRET}`,
        'content-type': 'message/rfc822',
        'x-envelope-from': 'sender@remote.example',
        'x-envelope-to': 'alice@example.test',
      },
    });
    expect(res.status, await res.clone().text()).toBe(202);
    for (const c of clients) {
      const f = await c.next(
        (x) => x.type === 'MESSAGE' && x.channel === s.aliceInbox.uid && (x.data as { type: string }).type === 'folder',
        20_000,
      );
      expect(f.data).toMatchObject({
        type: 'folder',
        action: 'update',
        data: { uid: s.aliceInbox.uid, mailboxUid: s.aliceBox, unreadCount: 1, totalCount: 1 },
      });
    }
    const stored = await stack.call('GET', `/api/mail/folders/${s.aliceInbox.uid}`, s.alice);
    expect(stored.body).toMatchObject({ unreadCount: 1, totalCount: 1 });
    clients.forEach((c) => c.close());
  }, 40_000);
});
