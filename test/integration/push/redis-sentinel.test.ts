// Redis with Sentinel (redis:sentinels, redis:sentinel_name): the event channel and the counters
// find the master through the Sentinels and follow a failover without a restart. Real redis-server
// master and replica and a real Sentinel (redis-server --sentinel), all on loopback ports of their own.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type SettingName } from '../../../lib/config/index.js';
import { checkRedis } from '../../../lib/setup/doctor/remote-checks.js';
import { createEventBus, type SharedEventBus } from '../../../lib/events/index.js';
import { createRateLimits, type RateLimits } from '../../../lib/http/index.js';
import { requirePrograms } from '../../helpers/peers.js';
import { freePort } from '../../helpers/scanners.js';

const present = requirePrograms('redis-server');

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.runIf(present)('Redis through Sentinel', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-sentinel-'));
  const children: ChildProcess[] = [];
  const ports = { master: 0, replica: 0, sentinel: 0 };
  let buses: SharedEventBus[] = [];
  let limits: RateLimits | undefined;
  const server = (args: string[]) => {
    const c = spawn('redis-server', args, { stdio: 'ignore' });
    children.push(c);
    return c;
  };
  const client = (port: number) =>
    new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 }).on('error', () => undefined);
  const sentinelMaster = async () => {
    const s = client(ports.sentinel);
    try {
      return (await s.call('SENTINEL', 'get-master-addr-by-name', 'svcmail-test')) as [string, string] | null;
    } finally {
      s.disconnect();
    }
  };

  beforeAll(async () => {
    for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
    const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
    server([...common, '--port', String(ports.master)]);
    server([...common, '--port', String(ports.replica), '--replicaof', '127.0.0.1', String(ports.master)]);
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${ports.sentinel}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor svcmail-test 127.0.0.1 ${ports.master} 1`,
        'sentinel down-after-milliseconds svcmail-test 1000',
        'sentinel failover-timeout svcmail-test 5000',
        '',
      ].join('\n'),
    );
    server([conf, '--sentinel']);
    await until('the replica to sync', async () => {
      const r = client(ports.replica);
      try {
        return /master_link_status:up/.test(await r.info('replication'));
      } finally {
        r.disconnect();
      }
    });
    await until('the Sentinel to see the master', async () => (await sentinelMaster())?.[1] === String(ports.master));
    // It learns of the replica from the master's INFO (every 10 s): only a replica it knows can be promoted.
    await until(
      'the Sentinel to know the replica',
      async () => {
        const s = client(ports.sentinel);
        try {
          const replicas = (await s.call('SENTINEL', 'replicas', 'svcmail-test')) as string[][];
          return replicas.some((r) => r[r.indexOf('port') + 1] === String(ports.replica));
        } finally {
          s.disconnect();
        }
      },
      40_000,
    );
  }, 90_000);
  afterAll(async () => {
    for (const b of buses) await b.close().catch(() => undefined);
    await limits?.close().catch(() => undefined);
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const values = () => ({
    // The host here is not used with Sentinels: only the database number and credentials are.
    'redis:url': 'redis://sentinel-managed.invalid:6379/0',
    'redis:sentinels': [`127.0.0.1:${ports.sentinel}`],
    'redis:sentinel_name': 'svcmail-test',
    'redis:prefix': 'sentinel-test:',
    'redis:command_timeout_ms': 2000,
  });
  const config = () => loadConfig({ env: { NODE_ENV: 'test' }, values: values() });

  it('svcmail doctor finds the master through the Sentinels, and says so when none names one', async () => {
    const explicit = new Set<SettingName>(['redis:url', 'redis:sentinels', 'redis:sentinel_name']);
    const good = await checkRedis({ config: config(), explicit });
    expect(good).toMatchObject({
      status: 'ok',
      detail: `127.0.0.1:${ports.master} (the master Sentinel 127.0.0.1:${ports.sentinel} names): PONG`,
    });
    const wrongName = loadConfig({ env: { NODE_ENV: 'test' }, values: { ...values(), 'redis:sentinel_name': 'nobody' } });
    expect(await checkRedis({ config: wrongName, explicit })).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('redis:sentinel_name'),
    });
  });

  it('events and counters reach the master the Sentinel names, and keep working after a failover', async () => {
    buses = [await createEventBus(config()), await createEventBus(config())];
    const seen: string[] = [];
    buses[1].subscribe('sentinel-channel', (_c, e) => void seen.push(String((e.data as { n: number }).n)));
    await buses[1].whenSubscribed?.('sentinel-channel');
    buses[0].publish(['sentinel-channel'], { type: 'folder', action: 'update', data: { n: 1 } });
    await until('the first event', async () => seen.includes('1'));

    limits = createRateLimits(config());
    const failures = limits.failures('sentinel');
    await failures.add('k', 60_000);
    const master = client(ports.master);
    expect((await master.keys('sentinel-test:*')).length).toBe(1);
    // Replication is asynchronous: the replica must have the counter before its master dies.
    expect(await master.call('WAIT', '1', '5000')).toBe(1);
    master.disconnect();

    // The master goes away: the Sentinel promotes the replica, and the clients follow it.
    children[0].kill('SIGKILL');
    await until('the failover', async () => (await sentinelMaster())?.[1] === String(ports.replica), 40_000);
    await until('counters on the new master', async () => {
      await failures.add('k', 60_000);
      return true;
    });
    expect(await failures.blockedFor('k', 2)).toBeGreaterThan(0);
    const promoted = client(ports.replica);
    expect((await promoted.info('replication')).includes('role:master')).toBe(true);
    expect((await promoted.keys('sentinel-test:*')).length).toBe(1);
    promoted.disconnect();
    await until('events after the failover', async () => {
      buses[0].publish(['sentinel-channel'], { type: 'folder', action: 'update', data: { n: 2 } });
      await new Promise((r) => setTimeout(r, 200));
      return seen.includes('2');
    });
  }, 90_000);
});
