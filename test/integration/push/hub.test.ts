// The embedded hub (lib/events/hub-transport.ts): election, a host killed with SIGKILL (stale
// socket and lock), and the mail event stream between buses over the real unix socket.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { HubTransport, SharedEventBus, type EntityEvent } from '../../../lib/events/index.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'svchub-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const busOn = async (path: string) => new SharedEventBus(new HubTransport(path)).start();
const nextEvent = (bus: SharedEventBus, channel: string, ms = 3000, test: (ev: EntityEvent) => boolean = () => true) =>
  new Promise<EntityEvent>((resolve, reject) => {
    const off = bus.subscribe(channel, (_c, ev) => {
      if (!test(ev)) return;
      off();
      resolve(ev);
    });
    setTimeout(() => reject(new Error(`no event on ${channel} within ${ms} ms`)), ms).unref();
  });

describe('embedded hub', () => {
  it('a hub host killed with SIGKILL is replaced and events flow again between the survivors', async () => {
    const path = join(dir, 'run', 'events.sock');
    // The first process to start hosts the hub: a separate node process here.
    const script = `const { HubTransport, SharedEventBus } = await import(${JSON.stringify(join(ROOT, 'lib/events/index.ts'))});
      const b = await new SharedEventBus(new HubTransport(${JSON.stringify(path)})).start();
      process.stdout.write(b.transport.hosting ? 'hosting\\n' : 'peer\\n'); setInterval(() => {}, 1000);`;
    const host = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const first = await new Promise<string>((resolve) => host.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
    expect(first).toBe('hosting');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'run')).mode & 0o777).toBe(0o700);

    const a = await busOn(path);
    const b = await busOn(path);
    expect([(a.transport as HubTransport).hosting, (b.transport as HubTransport).hosting]).toEqual([false, false]);
    let got = nextEvent(b, 'chan-1');
    a.publish(['chan-1'], { type: 'folder', action: 'update', data: { n: 1 } });
    expect((await got).data).toEqual({ n: 1 });

    host.kill('SIGKILL');
    await new Promise((r) => host.once('exit', r));
    // One survivor takes over (stale lock of a dead pid), the other joins; a message sent meanwhile is
    // kept, and what was written just before the host died is sent again (n: 1 may arrive twice).
    got = nextEvent(b, 'chan-1', 5000, (ev) => ev.data.n === 2);
    a.publish(['chan-1'], { type: 'folder', action: 'update', data: { n: 2 } });
    expect((await got).data).toEqual({ n: 2 });
    expect([(a.transport as HubTransport).hosting, (b.transport as HubTransport).hosting].filter(Boolean)).toHaveLength(1);
    got = nextEvent(a, 'chan-2');
    b.publish(['chan-2'], { type: 'folder', action: 'update', data: { n: 3 } });
    expect((await got).data).toEqual({ n: 3 });
    await a.close();
    await b.close();
  }, 20_000);

  it('takes over a lock left by a process whose pid now belongs to another process (after a reboot)', async () => {
    const path = join(dir, 'reboot', 'events.sock');
    mkdirSync(join(dir, 'reboot'), { mode: 0o700 });
    // pid 1 is alive, but it did not start at clock tick 1: the lock is stale.
    writeFileSync(`${path}.lock`, '1 1');
    writeFileSync(path, ''); // and a stale socket file
    const a = await busOn(path);
    expect((a.transport as HubTransport).hosting).toBe(true);
    const b = await busOn(path);
    const got = nextEvent(a, 'c');
    b.publish(['c'], { type: 'folder', action: 'update', data: { ok: true } });
    expect((await got).data).toEqual({ ok: true });
    await b.close();
    await a.close();
  });

  it('delivers the mail event stream at least once to each consumer, in order, retrying a consumer that throws', async () => {
    const path = join(dir, 'mail.sock');
    const producer = await busOn(path);
    const consumer = await busOn(path);
    const calls: number[] = [];
    const other: number[] = [];
    let fail = 2;
    const done = new Promise<void>((resolve) => {
      consumer.onMail('message.sent', (_k, p) => {
        calls.push(p.n as number);
        if (p.n === 1 && fail-- > 0) throw new Error('not ready');
        if (p.n === 3) resolve();
      });
    });
    consumer.onMail('message.sent', (_k, p) => {
      other.push(p.n as number);
    });
    for (const n of [1, 2, 3]) producer.emitMail('message.sent', { n });
    await done;
    expect(calls).toEqual([1, 1, 1, 2, 3]);
    expect(other).toEqual([1, 2, 3]); // one consumer's failure does not hold up another
    await producer.close();
    await consumer.close();
  });
});
