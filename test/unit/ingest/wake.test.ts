import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../../lib/config/index.js';
import { LocalEventBus } from '../../../lib/events/index.js';
import { wakeWorkers as wakeWith, type WakeJob } from '../../../lib/ingest/wake.js';

// Without redis:url (an in-process bus: no shared channel) every wake-up goes to the wake address.
const events = new LocalEventBus();
const wakeWorkers = (config: Config, job: WakeJob) => wakeWith({ config, events }, job);

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** A stand-in worker wake-up listener that holds each answer until released, counting arrivals. */
async function listener() {
  const held: ServerResponse[] = [];
  const paths: string[] = [];
  let arrived = 0;
  const server = createServer((req, res) => {
    arrived++;
    paths.push(req.url ?? '');
    req.resume();
    held.push(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(
    () =>
      new Promise((r) => {
        for (const res of held) res.end();
        server.close(() => r());
      }),
  );
  const config = loadConfig({
    env: { NODE_ENV: 'test' },
    values: { 'mail:jobs:wake_address': `127.0.0.1:${(server.address() as AddressInfo).port}` },
  });
  return {
    config,
    arrived: () => arrived,
    paths,
    answerAll: () => {
      for (const res of held.splice(0)) res.end('ok');
    },
  };
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
};

describe('waking the worker', () => {
  it('coalesces wake-ups asked for while one is on its way into one sent after it', async () => {
    const w = await listener();
    wakeWorkers(w.config, 'scan');
    await until(() => w.arrived() === 1);
    for (let i = 0; i < 50; i++) wakeWorkers(w.config, 'scan'); // a burst of hand-offs while the first is unanswered
    await new Promise((r) => setTimeout(r, 100));
    expect(w.arrived()).toBe(1);
    w.answerAll();
    await until(() => w.arrived() === 2); // exactly one more, sent after the burst
    w.answerAll();
    await new Promise((r) => setTimeout(r, 100));
    expect(w.arrived()).toBe(2);
    wakeWorkers(w.config, 'scan'); // nothing on its way: sent at once
    await until(() => w.arrived() === 3);
  });

  it('sends the owed wake-up when the first one fails', async () => {
    let arrived = 0;
    const server = createServer((req, res) => {
      arrived++;
      if (arrived === 1)
        req.socket.destroy(); // the first wake-up fails mid-way
      else res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => server.close(() => r())));
    const config = loadConfig({
      env: { NODE_ENV: 'test' },
      values: { 'mail:jobs:wake_address': `127.0.0.1:${(server.address() as AddressInfo).port}` },
    });
    wakeWorkers(config, 'scan');
    wakeWorkers(config, 'scan'); // owed while the first is on its way
    await until(() => arrived === 2);
    await new Promise((r) => setTimeout(r, 100));
    expect(arrived).toBe(2);
  });

  it('names the job it wakes, and coalesces each job on its own', async () => {
    const w = await listener();
    wakeWorkers(w.config, 'scan');
    wakeWorkers(w.config, 'send'); // another job: not owed behind the scan wake-up, sent at once
    await until(() => w.arrived() === 2);
    expect(w.paths.sort()).toEqual(['/wake/scan', '/wake/send']);
    wakeWorkers(w.config, 'scan');
    wakeWorkers(w.config, 'scan');
    await new Promise((r) => setTimeout(r, 100));
    expect(w.arrived()).toBe(2);
    w.answerAll();
    await until(() => w.arrived() === 3);
    expect(w.paths[2]).toBe('/wake/scan');
  });
});
