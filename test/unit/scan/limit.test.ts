// The worker's limit on scans in flight (lib/scan/limit.ts) against two kinds of scanner, simulated
// on a virtual clock: one whose time is spent waiting (a resolver 30 ms away: latency does not grow
// with load, so more scans side by side give more throughput) and one whose CPUs are the limit
// (beyond its capacity, work queues inside it and latency grows with the load).
import { describe, expect, it } from 'vitest';
import { AdaptiveLimit } from '../../../lib/scan/limit.js';

/** A discrete-event run: `producers` callers scan back to back through the limit, `count` scans in all. */
async function simulate(opts: {
  latency: (inFlight: number) => number;
  producers: number;
  count: number;
  limit: AdaptiveLimit;
  clock: { now: number };
}) {
  const pending: Array<{ at: number; done: () => void }> = [];
  let inService = 0;
  let finished = 0;
  const service = () =>
    new Promise<void>((done) => {
      inService += 1;
      pending.push({ at: opts.clock.now + opts.latency(inService), done });
    });
  let started = 0;
  const producer = async () => {
    while (started < opts.count) {
      started += 1;
      await opts.limit.run(service);
      inService -= 1;
      finished += 1;
    }
  };
  const all = Promise.all(Array.from({ length: opts.producers }, producer));
  const flush = () => new Promise((r) => setImmediate(r));
  const limits: number[] = [];
  while (finished < opts.count) {
    await flush();
    if (!pending.length) continue;
    pending.sort((a, b) => a.at - b.at);
    const next = pending.shift()!;
    opts.clock.now = next.at;
    next.done();
    limits.push(opts.limit.limit);
  }
  await all;
  return { limits, elapsed: opts.clock.now };
}

describe('the adaptive limit on scans in flight', () => {
  it('grows to its maximum while latency stays the same however many scans run (time spent waiting)', async () => {
    const clock = { now: 0 };
    const limit = new AdaptiveLimit({ initial: 16, min: 8, max: 64, now: () => clock.now });
    const { limits } = await simulate({ latency: () => 120, producers: 200, count: 8000, limit, clock });
    expect(limits.at(-1)).toBe(64);
    expect(Math.min(...limits)).toBeGreaterThanOrEqual(16);
    // Once there it stays there most of the time (a look below now and then).
    const late = limits.slice(-4000);
    expect(late.filter((l) => l === 64).length / late.length).toBeGreaterThan(0.8);
  });

  it('settles near the capacity of a scanner whose latency grows once its CPUs are busy', async () => {
    const clock = { now: 0 };
    const capacity = 12;
    const limit = new AdaptiveLimit({ initial: 16, min: 4, max: 256, now: () => clock.now });
    // Up to `capacity` scans at once take 10 ms; beyond it they queue inside the scanner.
    const { limits } = await simulate({ latency: (n) => 10 * Math.max(1, n / capacity), producers: 400, count: 6000, limit, clock });
    const late = limits.slice(-2000);
    const median = [...late].sort((a, b) => a - b)[late.length >> 1];
    expect(median).toBeGreaterThanOrEqual(capacity * 0.75);
    expect(median).toBeLessThanOrEqual(capacity * 3);
    expect(Math.max(...late)).toBeLessThan(256);
  });

  it('climbs again from its minimum when busy scanners become ones that wait', async () => {
    const clock = { now: 0 };
    const limit = new AdaptiveLimit({ initial: 16, min: 8, max: 64, now: () => clock.now });
    let done = 0;
    let seed = 7;
    const jitter = () => 0.8 + 0.4 * ((seed = (seed * 48271) % 2147483647) / 2147483647); // scans never take exactly as long
    // First CPU-bound with room for 4 (the limit sinks to its minimum), then waiting on a slow resolver.
    const latency = (n: number) => (++done < 3000 ? 10 * Math.max(1, n / 4) : 120) * jitter();
    const { limits } = await simulate({ latency, producers: 200, count: 12_000, limit, clock });
    expect(Math.min(...limits.slice(1000, 3000))).toBe(8);
    expect(Math.max(...limits.slice(-3000))).toBeGreaterThan(32);
  });

  it('stays put when fewer scans are wanted than it allows (no evidence of capacity)', async () => {
    const clock = { now: 0 };
    const limit = new AdaptiveLimit({ initial: 16, min: 8, max: 64, now: () => clock.now });
    await simulate({ latency: () => 50, producers: 4, count: 500, limit, clock });
    expect(limit.limit).toBe(16);
  });

  it('never lets more than the limit run at once, and hands a freed slot to a waiter', async () => {
    const limit = new AdaptiveLimit({ initial: 3, min: 3, max: 3 });
    let now = 0;
    let most = 0;
    const releases: Array<() => void> = [];
    const runs = Array.from({ length: 10 }, () =>
      limit.run(
        () =>
          new Promise<void>((r) => {
            most = Math.max(most, ++now);
            releases.push(() => {
              now--;
              r();
            });
          }),
      ),
    );
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setImmediate(r));
      releases.shift()?.();
    }
    await Promise.all(runs);
    expect(most).toBe(3);
    expect(limit.inFlight).toBe(0);
  });
});
