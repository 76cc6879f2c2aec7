// Ping fan-out for the eas benchmark: `users` mailboxes with `perUser` devices each, every device
// provisioned, FolderSynced and Synced (key 0, then 1) on its user's Inbox, then all parked on one
// Ping each (long heartbeat, one socket each); then one delivery into each mailbox, filed by the
// bench process, wakes them. Wake latency: from the start of the mailbox's filing to the Ping
// answer's last byte at the device (it includes the plugin's 50 ms coalescing of one filing's events).
import { readdirSync, readFileSync } from 'node:fs';
import type { Agent } from 'node:http';
import { signToken } from '../lib/auth/index.js';
import type { Config } from '../lib/config/index.js';
import type { Deps } from '../lib/context/index.js';
import { BenchDevice, deviceAgent, pingStatus, type Answer, type SyncOptions } from './_eas-client.js';
import { delivery, seedMailbox } from './_eas-seed.js';
import { cpuMsOf, percentile, round } from './_stats.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** VmRSS of a process, MiB. */
export function rssMiB(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return round(Number(kb ?? 0) / 1024, 1);
}

/** Open file descriptors of a process (its sockets among them). */
const fdsOf = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** Runs fn over items with at most `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/** Until the daemon used under 10 ms of CPU in 500 ms (every request it was sent is parked or answered), at most `maxMs`. */
async function quiet(pid: number, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  let before = cpuMsOf(pid);
  while (Date.now() < until) {
    await sleep(500);
    const now = cpuMsOf(pid);
    if (now - before < 10) return;
    before = now;
  }
}

export interface FanOutContext {
  base: URL;
  pid: number;
  config: Config;
  /** Filing deps whose event bus is the shared channel the daemon listens on. */
  deps: Deps;
  sync: SyncOptions;
  heartbeat: number;
  raw: Buffer;
}

interface Parked {
  dev: BenchDevice;
  box: string;
  inbox: string;
  answer?: Answer;
  error?: string;
  early: boolean;
}

async function setUp(ctx: FanOutContext, agent: Agent, label: string, users: number, perUser: number): Promise<Parked[]> {
  const devices: Parked[] = [];
  for (let u = 0; u < users; u++) {
    const owner = `${label}${u}`;
    const box = await seedMailbox(ctx.deps.store, owner);
    const token = await signToken(ctx.config, { uid: owner, ttlSeconds: 3600 });
    for (let k = 0; k < perUser; k++)
      devices.push({
        dev: new BenchDevice(ctx.base, token, `${label.toUpperCase()}${u}D${k}`, agent),
        box: box.uid,
        inbox: box.inbox,
        early: false,
      });
  }
  await pool(devices, 32, async (d) => {
    await d.dev.provision();
    const inbox = await d.dev.inbox();
    if (inbox !== d.inbox) throw new Error(`${d.dev.id}: FolderSync named ${inbox}, the Inbox is ${d.inbox}`);
    const zero = await d.dev.sync(inbox, 0, ctx.sync);
    await d.dev.sync(inbox, zero.key, ctx.sync);
  });
  return devices;
}

/**
 * Parks every device's Ping, in waves of 200 (the listen backlog is 511); `parked` resolves once the
 * daemon is quiet (every Ping read and parked), `answered` once every Ping was answered or failed.
 */
function park(ctx: FanOutContext, devices: Parked[]) {
  const state = { delivered: false };
  const answers: Array<Promise<void>> = [];
  const parked = (async () => {
    for (let i = 0; i < devices.length; i += 200) {
      for (const d of devices.slice(i, i + 200))
        answers.push(
          d.dev.ping([d.inbox], ctx.heartbeat).then(
            (a) => {
              d.answer = a;
              d.early = !state.delivered;
            },
            (e: unknown) => {
              d.error = (e as Error).message;
            },
          ),
        );
      await sleep(100);
    }
    await quiet(ctx.pid, 60_000);
  })();
  return { parked, answered: parked.then(() => Promise.all(answers)), markDelivered: () => void (state.delivered = true) };
}

/**
 * One scenario: set up, park, deliver one message to each mailbox (back to back, each filed alone),
 * wait for every Ping answer (at most 120 s). RSS and open descriptors of the daemon before and with
 * the Pings parked.
 */
export async function fanOut(ctx: FanOutContext, label: string, users: number, perUser: number): Promise<Record<string, unknown>> {
  const agent = deviceAgent();
  try {
    return await scenario(ctx, agent, label, users, perUser);
  } finally {
    agent.destroy();
  }
}

async function scenario(ctx: FanOutContext, agent: Agent, label: string, users: number, perUser: number): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const cpu0 = cpuMsOf(ctx.pid);
  const devices = await setUp(ctx, agent, label, users, perUser);
  const setupSeconds = (performance.now() - t0) / 1000;
  const setupCpu = cpuMsOf(ctx.pid) - cpu0;
  await sleep(1000);
  const before = { rss: rssMiB(ctx.pid), fds: fdsOf(ctx.pid) };
  const { parked: allParked, answered, markDelivered } = park(ctx, devices);
  await allParked;
  const parked = { rss: rssMiB(ctx.pid), fds: fdsOf(ctx.pid) };
  const file = await delivery(ctx.deps, ctx.raw);
  const startOf = new Map<string, number>();
  const filingMs: number[] = [];
  markDelivered();
  const cpuWake = cpuMsOf(ctx.pid);
  for (const box of [...new Set(devices.map((d) => d.box))]) {
    const t = performance.now();
    startOf.set(box, t);
    await file(box);
    filingMs.push(performance.now() - t);
  }
  const all = await Promise.race([answered, sleep(120_000).then(() => null)]);
  const wakeCpu = cpuMsOf(ctx.pid) - cpuWake;
  const done = devices.filter((d) => d.answer && !d.early);
  const lat = done.map((d) => d.answer!.receivedAt - startOf.get(d.box)!).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const d of done) statuses[pingStatus(d.answer!)] = (statuses[pingStatus(d.answer!)] ?? 0) + 1;
  filingMs.sort((a, b) => a - b);
  return {
    users,
    devices_per_user: perUser,
    devices: devices.length,
    setup_seconds: round(setupSeconds, 1),
    setup_server_cpu_ms_per_device: round(setupCpu / devices.length, 2),
    answered_before_delivery: devices.filter((d) => d.early).length,
    ping_errors: devices.filter((d) => d.error).length,
    first_ping_error: devices.find((d) => d.error)?.error,
    unanswered_after_120_s: all ? 0 : devices.filter((d) => !d.answer && !d.error).length,
    ping_statuses: statuses,
    wake_p50_ms: round(percentile(lat, 50), 1),
    wake_p99_ms: round(percentile(lat, 99), 1),
    wake_max_ms: round(lat[lat.length - 1] ?? NaN, 1),
    deliveries: filingMs.length,
    filing_p50_ms: round(percentile(filingMs, 50), 1),
    wake_server_cpu_ms_per_device: round(wakeCpu / devices.length, 3),
    rss_before_parking_mib: before.rss,
    rss_parked_mib: parked.rss,
    rss_kib_per_parked_ping: round(((parked.rss - before.rss) * 1024) / devices.length, 1),
    daemon_fds_before_parking: before.fds,
    daemon_fds_parked: parked.fds,
  };
}
