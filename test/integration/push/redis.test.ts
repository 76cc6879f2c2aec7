// Spec: Events 9 — the shared event channel over Redis pub/sub: real api, worker and two push
// daemons in separate processes, a real Redis at 127.0.0.1:6379 (required in CI, skipped elsewhere
// when absent). The worker files a message handed to /internal/mta and its folder event reaches the
// clients of both push copies through Redis: two push copies both receive an event published by
// the worker.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventBus, type MailEventKind } from '../../../lib/events/index.js';
import { redisAvailable } from '../../helpers/redis.js';
import { Client, freePort, seed, startStack, type Stack } from './_stack.js';

const REDIS_URL = process.env.SVCMAIL_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const WORKER = fileURLToPath(new URL('../../../bin/svcmail-worker.js', import.meta.url));
const INGEST_SECRET = 'push-redis-ingest-secret-0123456789';

const available = await redisAvailable();

describe.skipIf(!available)('/push over Redis', () => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let worker: ChildProcess | undefined;
  beforeAll(async () => {
    stack = await startStack({
      copies: 2,
      redisUrl: REDIS_URL,
      values: {
        'mail:transport:ingest:secret': INGEST_SECRET,
        'mail:jobs:scan:interval_seconds': 0.3,
        // Unreachable scanners count as clean under NODE_ENV=test (as in mta.test.ts).
        'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
        'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
        'mail:scan:timeout_ms': 500,
      },
    });
    s = await seed(stack);
  }, 60_000);
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      const gone = new Promise((r) => worker!.once('exit', r));
      worker.kill('SIGTERM');
      await gone;
    }
    await stack?.close();
  });

  it('an API change reaches clients of both push copies', async () => {
    const created = await stack.call('POST', '/api/mail/folders', s.alice, { mailboxUid: s.aliceBox, name: 'Redis' });
    expect(created.status).toBe(201);
    const uid = created.body.uid as string;
    for (const d of stack.push) expect(await (await fetch(`${d.url}/push/status`)).json()).toMatchObject({ transport: 'redis' });
    const clients = [await Client.open(stack.push[0].url, { token: s.alice }), await Client.open(stack.push[1].url, { token: s.alice })];
    for (const c of clients) expect(await c.subscribe([uid, s.aliceInbox.uid])).toEqual(['alice', uid, s.aliceInbox.uid]);
    const put = await stack.call('PUT', `/api/mail/folders/${uid}`, s.alice, { name: 'Redis 2', version: created.body.version });
    expect(put.status).toBe(200);
    for (const c of clients) {
      const f = await c.next((x) => x.type === 'MESSAGE' && x.channel === uid);
      expect(f.data).toMatchObject({ type: 'folder', action: 'update', data: { uid, name: 'Redis 2' } });
    }
    clients.forEach((c) => c.close());
  });

  it(
    'the worker daemon files a handed-off message and its folder event reaches both push copies over Redis',
    { timeout: 60_000 },
    async () => {
      const inbox = s.aliceInbox.uid;
      const clients = [await Client.open(stack.push[0].url, { token: s.alice }), await Client.open(stack.push[1].url, { token: s.alice })];
      for (const c of clients) expect(await c.subscribe([inbox])).toEqual(['alice', inbox]);
      // A plain Redis subscriber on the inbox channel sees what crosses Redis.
      const channel = `${stack.config.get('redis:prefix')}ch:${inbox}`;
      const spy = new Redis(REDIS_URL);
      const wire: Array<{ ev: { type: string; data: Record<string, unknown> } }> = [];
      spy.on('message', (ch: string, text: string) => {
        if (ch === channel) wire.push(JSON.parse(text) as (typeof wire)[number]);
      });
      await spy.subscribe(channel);
      try {
        const raw = `From: Sender <sender@remote.example>\r\nTo: alice@example.test\r\nSubject: Over Redis\r\nMessage-ID: <redis-${Date.now()}@remote.example>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello\r\n`;
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
        // The api daemon only queues the message: no folder event until the worker runs.
        await new Promise((r) => setTimeout(r, 1500));
        const folderFrames = (c: Client) =>
          c.frames.filter((x) => x.type === 'MESSAGE' && x.channel === inbox && (x.data as { type: string }).type === 'folder');
        for (const c of clients) expect(folderFrames(c)).toEqual([]);
        expect(wire).toEqual([]);

        worker = spawn(process.execPath, [WORKER, '--config', stack.configFile], {
          env: { ...process.env, NODE_ENV: 'test', NOTIFY_SOCKET: '' },
          stdio: ['ignore', 'ignore', 'inherit'],
        });
        const counts = { uid: inbox, mailboxUid: s.aliceBox, unreadCount: 1, totalCount: 1 };
        for (const c of clients) {
          const f = await c.next(
            (x) => x.type === 'MESSAGE' && x.channel === inbox && (x.data as { type: string }).type === 'folder',
            30_000,
          );
          expect(f.data).toMatchObject({ type: 'folder', action: 'update', data: counts });
        }
        expect(wire.map((m) => m.ev)).toContainEqual(expect.objectContaining({ type: 'folder', data: expect.objectContaining(counts) }));
        // Redis carried it: no daemon fell back to the embedded hub.
        expect(existsSync(join(stack.dir, 'run/events.sock'))).toBe(false);
        const stored = await stack.call('GET', `/api/mail/folders/${inbox}`, s.alice);
        expect(stored.body).toMatchObject({ unreadCount: 1, totalCount: 1 });
      } finally {
        spy.disconnect();
        clients.forEach((c) => c.close());
      }
    },
  );

  it('the mail event stream goes between two buses over Redis, with at-least-once delivery to a consumer', async () => {
    const producer = await createEventBus(stack.config);
    const consumer = await createEventBus(stack.config);
    try {
      const seen: Array<Record<string, unknown>> = [];
      let failures = 0;
      const done = new Promise<void>((resolve) => {
        consumer.onMail('message.delivered' as MailEventKind, (_k, p) => {
          seen.push(p);
          if (failures < 2) {
            failures++;
            throw new Error('consumer not ready');
          }
          if (p.n === 2) resolve();
        });
      });
      producer.emitMail('message.delivered', { n: 1 });
      producer.emitMail('message.delivered', { n: 2 });
      await done;
      expect(seen.map((p) => p.n)).toEqual([1, 1, 1, 2]);
    } finally {
      await producer.close();
      await consumer.close();
    }
  });
});
