// /push keep-alive and back-pressure against real push daemons: a client that stops reading is
// dropped (by the ping when idle, by the buffered-bytes limit under load); others are not.
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createEventBus } from '../../../lib/events/index.js';
import { Client, freePort, seed, spawnDaemon, startStack, type Daemon, type Stack } from './_stack.js';

let stack: Stack;
let s: Awaited<ReturnType<typeof seed>>;
let pinging: Daemon;

beforeAll(async () => {
  stack = await startStack({ copies: 1, values: { 'mail:push:max_buffered_bytes': 65_536 } });
  s = await seed(stack);
  const port = await freePort();
  pinging = await spawnDaemon('push', stack.configFile, [`listen:push=127.0.0.1:${port}`, 'mail:push:ping_ms=300'], '/push/status', port);
}, 60_000);
afterAll(async () => {
  await pinging?.stop();
  await stack?.close();
});

const socketOf = (c: Client) => (c.ws as unknown as { _socket: Socket })._socket;
const status = async (d: Daemon) => (await fetch(`${d.url}/push/status`)).json() as Promise<{ connections: number; dropped: number }>;

describe('/push flow control', () => {
  it('drops a client that stops answering pings; one that answers stays', async () => {
    const live = await Client.open(pinging.url, { token: s.alice });
    const dead = await Client.open(pinging.url, { token: s.bob });
    await live.next((f) => f.type === 'LOGGED_IN');
    await dead.next((f) => f.type === 'LOGGED_IN');
    socketOf(dead).pause(); // reads nothing: no pong goes back
    await new Promise((r) => setTimeout(r, 1200));
    expect((await status(pinging)).connections).toBe(1);
    expect(live.ws.readyState).toBe(WebSocket.OPEN);
    socketOf(dead).resume();
    expect((await dead.closed).code).toBe(1006);
    live.close();
  });

  it('drops a slow client once its unsent data passes mail:push:max_buffered_bytes; a reading client gets everything', async () => {
    const bus = await createEventBus(stack.config);
    try {
      const slow = await Client.open(stack.push[0].url, { token: s.alice });
      const fast = await Client.open(stack.push[0].url, { token: s.alice });
      for (const c of [slow, fast]) await c.subscribe([s.aliceInbox.uid]);
      socketOf(slow).pause();
      const before = (await status(stack.push[0])).dropped;
      const blob = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 300; i++) bus.publish([s.aliceInbox.uid], { type: 'folder', action: 'update', data: { i, blob } });
      await fast.next((f) => f.type === 'MESSAGE' && (f.data as { data: { i: number } }).data.i === 299, 10_000);
      expect(fast.frames.filter((f) => f.type === 'MESSAGE')).toHaveLength(300);
      expect((await status(stack.push[0])).dropped).toBe(before + 1);
      socketOf(slow).resume();
      expect((await slow.closed).code).toBe(1006);
      // Everything it got before the cut arrived in order; far fewer than 300 frames.
      const got = slow.frames.filter((f) => f.type === 'MESSAGE').map((f) => (f.data as { data: { i: number } }).data.i);
      expect(got.length).toBeLessThan(300);
      expect(got).toEqual(got.map((_, i) => i));
      fast.close();
    } finally {
      await bus.close();
    }
  });
});
