// Wake-ups across copies (issue #29): with redis:url a hand-off accepted by one api copy wakes the
// workers of every copy over the Redis channel <redis:prefix>wake. The worker daemon here has no
// wake-up address and a scan period of an hour, and the api daemon no wake-up address either: a
// message filed within seconds can only have been filed because the wake-up came over Redis. A
// message on the channel naming no job, or not a wake-up at all, is ignored and the worker lives on.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config/index.js';
import { createEventBus, type SharedEventBus } from '../../../lib/events/index.js';
import { wakeWorkers } from '../../../lib/ingest/index.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { TEST_SECRET } from '../../helpers/api.js';
import { storeBackends } from '../../helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../../helpers/redis.js';
import { freePort } from '../../helpers/scanners.js';
import { daemons, exited, type Daemons } from './daemons.js';
import { ingestFixture, INGEST_SECRET, message, type IngestFixture } from './setup.js';

const [sqlite] = await storeBackends();
const withRedis = await redisAvailable();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How many clients listen on the channel (PUBSUB NUMSUB). */
async function listeners(redis: Redis, channel: string): Promise<number> {
  const reply = (await redis.pubsub('NUMSUB', channel)) as [string, number];
  return Number(reply[1]);
}

async function until(what: string, cond: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe.runIf(withRedis)('wake-ups on the shared Redis channel', () => {
  const prefix = `svcmail-test-${randomBytes(4).toString('hex')}:`;
  const channel = `${prefix}wake`;
  const shared = { 'redis:url': TEST_REDIS_URL, 'redis:prefix': prefix };
  let redis: Redis;
  const heard: string[] = [];

  afterAll(async () => {
    const keys = (await redis?.keys(`${prefix}*`)) ?? [];
    if (keys.length) await redis.del(...keys);
    redis?.disconnect();
  });
  beforeAll(async () => {
    redis = new Redis(TEST_REDIS_URL);
  });

  describe('between the daemons', () => {
    let f: IngestFixture;
    let d: Daemons;
    let worker: ChildProcess;
    let apiUrl: string;
    let watch: Redis;
    const filed = (subject: string) =>
      f.api.deps.store.repo<Message>(MessageModel).list({ filter: { mailboxUid: f.users.aliceBox.uid, subject } });

    beforeAll(async () => {
      // The fixture's in-process api (no Redis, no wake-up address) seeds the users and queues
      // messages that wake nobody; the daemons below share its database.
      f = await ingestFixture(sqlite);
      d = daemons(f);
      watch = new Redis(TEST_REDIS_URL);
      watch.on('message', (_ch: string, msg: string) => void heard.push(msg));
      await watch.subscribe(channel);
      worker = await d.start(
        'worker',
        {},
        { ...shared, 'mail:jobs:wake_address': '', 'mail:jobs:scan:interval_seconds': 3600, 'log:level': 'warn' },
      );
      const port = await freePort();
      const api = await d.start('api', {}, { ...shared, 'listen:api': `127.0.0.1:${port}`, 'mail:jobs:wake_address': '' });
      apiUrl = `http://127.0.0.1:${port}`;
      // The worker listens on the channel (beside the test's own listener) once it has started.
      await until(
        'the worker to subscribe',
        async () => {
          if (worker.exitCode !== null) throw new Error(`the worker exited: ${d.said(worker)}`);
          return (await listeners(redis, channel)) >= 2;
        },
        60_000,
      );
      await until(
        'the api daemon',
        async () => {
          if (api.exitCode !== null) throw new Error(`the api daemon exited: ${d.said(api)}`);
          return fetch(`${apiUrl}/api/status`).then(
            (r) => r.ok,
            () => false,
          );
        },
        60_000,
      );
    }, 90_000);
    afterAll(async () => {
      watch?.disconnect();
      d?.killAll();
      await f?.close();
    });

    it('a hand-off to the api daemon wakes the worker over Redis: filed long before the scan period', async () => {
      const before = heard.length;
      const r = await fetch(`${apiUrl}/internal/mta/deliver`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${INGEST_SECRET}`,
          'content-type': 'message/rfc822',
          'x-envelope-from': 'sender%40remote.example',
          'x-envelope-to': 'alice%40example.test',
          'x-transaction-id': 'wake-shared-1',
        },
        body: message({ subject: 'Woken over Redis' }),
      });
      expect(r.status).toBe(202);
      await until('the message to be filed', async () => (await filed('Woken over Redis')).length === 1, 15_000);
      // The wake-up the api daemon published, as every copy's worker received it.
      expect(heard.slice(before).map((m) => JSON.parse(m).job)).toContain('scan');
    }, 30_000);

    it('ignores wake-ups naming no job and messages that are no wake-up; a valid one still works', async () => {
      const q = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'Woken by hand' }), tx: 'wake-shared-2' });
      expect(q.status).toBe(202); // queued by the in-process api: nobody woken
      for (const bad of [
        'not json',
        '{"job":"nope"}',
        '{"job":"constructor"}',
        '{"job":"__proto__"}',
        '{"job":"toString"}',
        '{"job":42}',
        '{"job":""}',
        `{"job":"${'x'.repeat(100)}"}`,
        '[]',
        'null',
        '{}',
        '{"job":"send"}', // a real job, but not the scan: the entry stays queued
      ])
        await redis.publish(channel, bad);
      await sleep(1500);
      expect(worker.exitCode).toBeNull();
      expect(await filed('Woken by hand')).toHaveLength(0); // none of those woke the scan job
      expect(d.said(worker)).toContain('wake-up for an unknown job ignored');
      expect(d.said(worker)).toContain('malformed message ignored');
      await redis.publish(channel, JSON.stringify({ job: 'scan', t: Date.now() }));
      await until('the message to be filed', async () => (await filed('Woken by hand')).length === 1, 15_000);
    }, 30_000);

    it('the worker stops cleanly and leaves the channel', async () => {
      worker.kill('SIGTERM');
      expect(await exited(worker)).toBe(0);
      await until('the worker to leave the channel', async () => (await listeners(redis, channel)) === 1, 10_000);
    }, 30_000);
  });

  describe('wakeWorkers and the bus', () => {
    const buses: SharedEventBus[] = [];
    afterAll(async () => {
      for (const b of buses.splice(0)) await b.close();
    });
    async function bus(wakeAddress = '', p = prefix) {
      const config = loadConfig({
        env: { NODE_ENV: 'test' },
        values: {
          'auth:secret': TEST_SECRET,
          'log:level': 'silent',
          'redis:url': TEST_REDIS_URL,
          'redis:prefix': p,
          'mail:jobs:wake_address': wakeAddress,
        },
      });
      const events = await createEventBus(config);
      buses.push(events);
      return { config, events };
    }
    /** A stand-in for a worker's wake-up address, counting the POSTs. */
    async function address() {
      const paths: string[] = [];
      const server = createServer((req, res) => {
        paths.push(req.url ?? '');
        res.writeHead(204).end();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return { at: `127.0.0.1:${(server.address() as AddressInfo).port}`, paths, close: () => new Promise((r) => server.close(r)) };
    }

    it('reaches every listening copy instead of the local address, and unsubscribes on stop', async () => {
      const local = await address();
      const p = `svcmail-test-${randomBytes(4).toString('hex')}:`;
      const api = await bus(local.at, p);
      const [one, two] = [await bus('', p), await bus('', p)];
      const got: string[][] = [[], []];
      const stops = [await one.events.onWake((job) => got[0].push(job)), await two.events.onWake((job) => got[1].push(job))];
      wakeWorkers(api, 'send');
      await until('both copies to be woken', () => got[0].length === 1 && got[1].length === 1, 5000);
      expect(got).toEqual([['send'], ['send']]);
      await sleep(200);
      expect(local.paths).toEqual([]); // the channel reached workers: the local address is not asked too
      for (const stop of stops) await stop!();
      expect(await listeners(redis, `${p}wake`)).toBe(0);
      // Nobody listens any more: the wake-up falls back to the local address.
      wakeWorkers(api, 'lifecycle');
      await until('the local address to be woken', () => local.paths.length === 1, 5000);
      expect(local.paths).toEqual(['/wake/lifecycle']);
      expect(got).toEqual([['send'], ['send']]);
      await local.close();
    }, 30_000);
  });
});
