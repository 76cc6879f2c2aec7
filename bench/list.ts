// The list benchmark: GET a list of 100 records with a valid token at 50 connections, on SQLite and on
// PostgreSQL (and MongoDB when SVCMAIL_TEST_MONGO_URL names a replica set), beside a bare Express route returning the same records (same JSON bytes) from memory.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { signToken } from '../lib/auth/index.js';
import { loadConfig } from '../lib/config/index.js';
import { freshMongo, freshPostgres, mongoTestUrl, NO_MONGO, overLocalSocket, postgresAvailable } from '../test/helpers/databases.js';
import { stageBuild, type Staged } from './_build.js';
import { cpuMsOf, median, round } from './_stats.js';
import { startBenchServer } from './_process.js';

const SECRET = 'bench-secret-0123456789abcdef';
const CONNECTIONS = 50;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);

const startServer = (stage: Staged, mode: string, arg: string) =>
  startBenchServer(stage, '_list-server', [mode, arg], { BENCH_SECRET: SECRET, NODE_ENV: 'production' });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(url: string, method: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** A mailbox with 100 folders (7 system + 93 user), listed as its owner. */
async function seed(url: string): Promise<{ path: string; token: string }> {
  const config = loadConfig({
    env: { NODE_ENV: 'production' },
    values: { 'auth:secret': SECRET, 'auth:options:audience': 'bench', 'auth:options:issuer': 'bench' },
  });
  const admin = await signToken(config, { uid: 'root', roles: ['admin'], elevated: true, ttlSeconds: 3600 });
  const owner = await signToken(config, { uid: 'owner', roles: [], ttlSeconds: 3600 });
  await call(`${url}/api/mail/domains`, 'POST', admin, { name: 'bench.test' });
  const box = await call(`${url}/api/mail/mailboxes`, 'POST', admin, { address: 'owner@bench.test', owners: ['owner'] });
  for (let i = 0; i < 93; i++)
    await call(`${url}/api/mail/folders`, 'POST', owner, { mailboxUid: box.uid, name: `Project ${String(i).padStart(3, '0')}` });
  return { path: `/api/mail/folders?mailboxUid=${box.uid}&limit=100`, token: owner };
}

async function load(
  pid: number,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ rps: number; p50: number; p99: number; errors: number; cpuUsPerReq: number }> {
  const before = cpuMsOf(pid);
  const r = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers, pipelining: 1 });
  const cpu = cpuMsOf(pid) - before;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.non2xx,
    cpuUsPerReq: (cpu * 1000) / Math.max(1, r.requests.total),
  };
}

type Sample = Awaited<ReturnType<typeof load>>;

function summary(runs: Sample[]) {
  return {
    rps: round(median(runs.map((r) => r.rps)), 0),
    p50_ms: median(runs.map((r) => r.p50)),
    p99_ms: median(runs.map((r) => r.p99)),
    server_cpu_us_per_req: round(median(runs.map((r) => r.cpuUsPerReq)), 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    runs: runs.length,
  };
}

/**
 * Every server runs for the whole benchmark (idle ones cost nothing) and the runs go round them in
 * turn — run 1 of each, then run 2 of each — so a slow spell of this shared machine falls on all of
 * them alike instead of on whichever was measured during it (the ratios are the figures to quote:
 * TESTING.md, Load and benchmarks).
 */
async function interleaved(targets: Array<{ pid: number; url: string; headers?: Record<string, string> }>): Promise<Sample[][]> {
  for (const t of targets) await load(t.pid, t.url, t.headers); // warm-up
  const runs: Sample[][] = targets.map(() => []);
  for (let i = 0; i < RUNS; i++) {
    for (const [k, t] of targets.entries()) runs[k].push(await load(t.pid, t.url, t.headers));
  }
  return runs;
}

export default async function list(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-bench-'));
  // The servers run the product's build, as the package ships it (bench/_build.ts; BENCH_FROM_SOURCES=1: the sources through tsx).
  const stage = stageBuild(['_list-server']);
  const out: Record<string, unknown> = { code: stage.code, connections: CONNECTIONS, seconds_per_run: SECONDS, records: 100 };
  const backends: Array<{ name: string; url: string; drop?: () => Promise<void> }> = [
    { name: 'sqlite', url: `sqlite:${join(dir, 'bench.sqlite')}` },
  ];
  // BENCH_BACKENDS=postgres (or sqlite, document) measures those backends only.
  const only = process.env.BENCH_BACKENDS?.split(',');
  if (only) backends.splice(0, backends.length, ...backends.filter((b) => only.includes(b.name)));
  if ((!only || only.includes('postgres')) && (await postgresAvailable())) {
    const pg = await freshPostgres();
    // The api daemon reaches a server on this machine over its Unix socket, as svcmail.conf(5) advises for a local server (BENCH_PG_TCP=1: 127.0.0.1).
    const url = process.env.BENCH_PG_TCP ? pg.url : overLocalSocket(pg.url);
    out.postgres_connection = url === pg.url ? 'tcp' : 'unix socket';
    backends.push({ name: 'postgres', url, drop: pg.drop });
  }
  if (!only || only.includes('document')) {
    const mongo = mongoTestUrl() ? await freshMongo() : null;
    if (mongo) backends.push({ name: 'document', url: mongo.url, drop: mongo.drop });
    else out.document = NO_MONGO;
  }
  const servers: ChildProcess[] = [];
  try {
    const targets: Array<{ name: string; pid: number; url: string; headers?: Record<string, string> }> = [];
    let bareBody: unknown = null;
    for (const b of backends) {
      const { child, url } = await startServer(stage, 'db', b.url);
      servers.push(child);
      const { path, token } = await seed(url);
      if (!bareBody) bareBody = await call(url + path, 'GET', token);
      targets.push({ name: b.name, pid: child.pid!, url: url + path, headers: { authorization: `Bearer ${token}` } });
    }
    const file = join(dir, 'records.json');
    writeFileSync(file, JSON.stringify(bareBody));
    const bare = await startServer(stage, 'bare', file);
    servers.push(bare.child);
    targets.push({ name: 'bare', pid: bare.child.pid!, url: `${bare.url}/bare` });
    const runs = await interleaved(targets);
    for (const [k, t] of targets.entries()) out[t.name] = summary(runs[k]);
    // Each run's ratio is to the bare run right beside it; the median of those is the figure.
    const bareRuns = runs[targets.length - 1];
    for (const [k, b] of backends.entries()) {
      const fig = out[b.name] as Record<string, unknown>;
      fig.ratio_to_bare = round(median(runs[k].map((r, i) => r.rps / bareRuns[i].rps)), 2);
      // Requests per CPU-second relative to the bare route: the same ratio, less disturbed by other processes.
      fig.cpu_ratio_to_bare = round(median(runs[k].map((r, i) => bareRuns[i].cpuUsPerReq / r.cpuUsPerReq)), 2);
    }
    out.response_bytes = Buffer.byteLength(JSON.stringify(bareBody));
    return out;
  } finally {
    for (const c of servers) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200)); // the servers let go of the databases
    for (const b of backends) await b.drop?.();
    rmSync(dir, { recursive: true, force: true });
    stage.remove();
  }
}
