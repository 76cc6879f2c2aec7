// The ingest benchmark: hand off messages from the SpamAssassin corpus (1–3 recipients each) with 16
// concurrent senders to the real api daemon, with the real worker daemon filing them; accepted/s
// at the hand-off, filed/s end to end and p99 hand-off→filed, on SQLite and PostgreSQL, with the
// development clean scanner and with real rspamd + clamd. Peers in the same run: Dovecot LMTP alone
// (beside the development scanner) and the peer chain rspamd + clamd + Dovecot LMTP (beside the
// real scanners, with the same rspamd, clamd and loopback resolver).
//   npm run bench -- ingest [count] [sqlite|postgres|document|all] [dev|real|all]
//   npm run bench -- ingest [count] postgres copies      one copy vs two copies (scale-out, CPU per message)
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../lib/config/index.js';
import { clamdScan, rspamdCheck } from '../lib/scan/index.js';
import { freshMongo, freshPostgres, mongoTestUrl, NO_MONGO, overLocalSocket, postgresAvailable } from '../test/helpers/databases.js';
import { redisAvailable } from '../test/helpers/redis.js';
import { freePort, startScanners } from '../test/helpers/scanners.js';
import { stageBuild, type Staged } from './_build.js';
import { dovecotInstalled, LmtpClient, startDovecot } from './_dovecot.js';
import { clientOf, corpus, MAILBOXES, rcptsOf, run, SECRET, SENDERS, setAppRoot, type ScannerAddresses } from './_ingest-run.js';
import { percentile, round } from './_stats.js';

/** The peer chain's scan of message i: rspamd (/checkv2 with IP, Helo, From, Rcpt, Queue-Id) and clamd (INSTREAM) side by side. */
function peerScan(s: ScannerAddresses): (i: number, raw: Buffer) => Promise<void> {
  const config = loadConfig({
    env: { NODE_ENV: 'production' },
    values: { 'auth:secret': SECRET, 'mail:scan:rspamd:url': s.rspamdUrl, 'mail:scan:clamd:address': s.clamdAddress },
  });
  return async (i, raw) => {
    const c = clientOf(i);
    await Promise.all([
      rspamdCheck(config, { raw, from: 'sender@remote.example', rcpt: rcptsOf(i), ip: c.address, helo: c.helo, queueId: `P${i}` }),
      clamdScan(config, raw),
    ]);
  };
}

/**
 * The same corpus and recipients through Dovecot's LMTP (the 250 per recipient means filed and
 * fsynced). With `scanners`, the peer chain: each message is first scanned by the same rspamd (with
 * the SMTP session's headers) and clamd, as Postfix with the rspamd milter and a clamd milter does,
 * then delivered over LMTP.
 */
async function dovecot(count: number, messages: Buffer[], scanners: ScannerAddresses | null = null): Promise<Record<string, unknown>> {
  const scan = scanners ? peerScan(scanners) : null;
  const port = await freePort();
  const d = startDovecot(port);
  try {
    await new Promise((r) => setTimeout(r, 500));
    let next = 0;
    let copies = 0;
    let errors = 0;
    const lat: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        const c = new LmtpClient(port);
        await c.start();
        while (next < count) {
          const i = next++;
          const t = performance.now();
          if (scan) await scan(i, messages[i % messages.length]);
          const replies = await c.deliver('sender@remote.example', rcptsOf(i), messages[i % messages.length]);
          lat.push(performance.now() - t);
          for (const r of replies)
            if (r.startsWith('250')) copies++;
            else errors++;
        }
        c.close();
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    lat.sort((a, b) => a - b);
    return {
      messages: count,
      copies,
      errors,
      filed_messages_per_s: round(count / seconds, 0),
      filed_copies_per_s: round(copies / seconds, 0),
      p99_ms: round(percentile(lat, 99), 1),
    };
  } finally {
    d.stop();
  }
}

export default async function ingest(args: string[]): Promise<Record<string, unknown>> {
  const count = Number(args[0] ?? process.env.BENCH_INGEST_COUNT ?? 20_000);
  const which = args[1] ?? 'all';
  const messages = corpus();
  const stage = stageBuild();
  setAppRoot(stage.root);
  try {
    if (args[2] === 'copies') return await scaling(count, messages, stage.code);
    const scans = (args[2] ?? 'all') === 'all' ? (['dev', 'real'] as const) : [args[2] as 'dev' | 'real'];
    return await measure(count, which, scans, messages, stage.code);
  } finally {
    stage.remove();
  }
}

/**
 * Scale-out on this machine (`ingest <count> postgres copies`): the same hand-offs through one copy
 * (api + worker) and through two copies sharing PostgreSQL, Redis and a blob directory, with the
 * development scanner. Two cores cannot double the rate: the CPU per message (every daemon and the
 * database server) says what a second host would add.
 */
async function scaling(count: number, messages: Buffer[], code: Staged['code']): Promise<Record<string, unknown>> {
  if (!(await postgresAvailable()) || !(await redisAvailable())) return { code, skipped: 'needs PostgreSQL and Redis on loopback' };
  const out: Record<string, unknown> = { code, senders: SENDERS, mailboxes: MAILBOXES, cores: cpus().length };
  const pg = { url: async () => freshPostgres().then((db) => ({ url: overLocalSocket(db.url), drop: db.drop })) };
  for (const [key, copies, scaledOut] of [
    ['postgres_dev_one_copy_without_redis', 1, false],
    ['postgres_dev_one_copy', 1, true],
    ['postgres_dev_two_copies', 2, true],
  ] as const) {
    // One copy is deployed as the two are (Redis, the shared blob directory): only the second copy
    // differs; the same copy without Redis shows what the shared event channel costs.
    const f = await onFreshDb(pg, (url) => run(url, 'dev', count, messages, null, copies, scaledOut));
    const perCopy = ['api_cpu_ms_per_message', 'worker_cpu_ms_per_copy', 'db_server_cpu_ms_per_copy'] as const;
    const copiesFiled = (f.copies as number) / count; // filed copies per message (1-3 recipients)
    const cpu =
      (f.api_cpu_ms_per_message as number) +
      ((f.worker_cpu_ms_per_copy as number) + ((f.db_server_cpu_ms_per_copy as number | undefined) ?? 0)) * copiesFiled;
    out[key] = { ...f, total_cpu_ms_per_message: perCopy.every((k) => f[k] !== null) ? round(cpu, 2) : null };
  }
  const one = out.postgres_dev_one_copy as { filed_messages_per_s?: number };
  const two = out.postgres_dev_two_copies as { filed_messages_per_s?: number };
  if (one.filed_messages_per_s && two.filed_messages_per_s)
    out.two_copies_to_one_ratio = round(two.filed_messages_per_s / one.filed_messages_per_s, 2);
  return out;
}

/** Runs `fn` on a fresh database of the backend and drops it after. */
async function onFreshDb<T>(
  b: { url: () => Promise<{ url: string; drop(): Promise<void> }> },
  fn: (url: string) => Promise<T>,
): Promise<T> {
  const db = await b.url();
  try {
    return await fn(db.url);
  } finally {
    await db.drop();
  }
}

async function measure(
  count: number,
  which: string,
  scans: ReadonlyArray<'dev' | 'real'>,
  messages: Buffer[],
  code: Staged['code'],
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {
    code,
    senders: SENDERS,
    mailboxes: MAILBOXES,
    corpus: messages.length,
    recipients_per_message: '1-3',
  };
  if (scans.includes('dev'))
    out.dovecot_lmtp = dovecotInstalled() ? await dovecot(count, messages) : 'not measured: dovecot-lmtpd is not installed';
  const backends: Array<{ name: string; url: () => Promise<{ url: string; drop(): Promise<void> }> }> = [];
  if (which === 'all' || which === 'sqlite')
    backends.push({
      name: 'sqlite',
      url: async () => {
        const d = mkdtempSync(join(tmpdir(), 'svcmail-bench-db-'));
        return { url: `sqlite:${join(d, 'b.sqlite')}`, drop: async () => rmSync(d, { recursive: true, force: true }) };
      },
    });
  if ((which === 'all' || which === 'postgres') && (await postgresAvailable())) {
    // The daemons reach a server on this machine over its Unix socket (BENCH_PG_TCP=1: 127.0.0.1).
    backends.push({
      name: 'postgres',
      url: async () => {
        const db = await freshPostgres();
        const url = process.env.BENCH_PG_TCP ? db.url : overLocalSocket(db.url);
        out.postgres_connection = url === db.url ? 'tcp' : 'unix socket';
        return { url, drop: db.drop };
      },
    });
  }
  if (which === 'all' || which === 'document') {
    if (mongoTestUrl()) backends.push({ name: 'document', url: freshMongo });
    else out.document = NO_MONGO;
  }
  for (const b of backends) {
    if (scans.includes('dev')) out[`${b.name}_dev`] = await onFreshDb(b, (url) => run(url, 'dev', count, messages, null));
    // Real rspamd (every stock module, a worker per core) and clamd, asking a resolver on loopback that
    // answers NXDOMAIN at once, then one that answers after 30 ms like a working caching resolver.
    if (scans.includes('real'))
      for (const [key, delayMs] of [
        ['real', 0],
        ['real_dns30', 30],
      ] as const) {
        const scanners = await startScanners({ resolverDelayMs: delayMs, rspamdWorkers: cpus().length });
        try {
          // The peer chain with the same scanners and resolver, once per resolver (not once per backend).
          const peerKey = `peer_chain${key.slice('real'.length)}`;
          if (!out[peerKey])
            out[peerKey] = dovecotInstalled() ? await dovecot(count, messages, scanners) : 'not measured: dovecot-lmtpd is not installed';
          const questions = scanners.resolver.queries.length;
          const figures = await onFreshDb(b, (url) => run(url, 'real', count, messages, scanners));
          out[`${b.name}_${key}`] = {
            ...figures,
            rspamd_workers: cpus().length,
            dns_questions: scanners.resolver.queries.length - questions,
          };
          const chain = out[peerKey] as { filed_messages_per_s?: number } | string;
          const ours = (figures as { filed_messages_per_s?: number }).filed_messages_per_s;
          if (typeof chain === 'object' && chain.filed_messages_per_s && ours)
            out[`${b.name}_${key}_ratio_to_peer_chain`] = round(ours / chain.filed_messages_per_s, 2);
        } finally {
          await scanners.stop();
        }
      }
  }
  // The headline figure: filed messages/s with the development scanner, as a ratio to Dovecot's (a peer
  // measured in the same run: TESTING.md, Load and benchmarks).
  const peer = out.dovecot_lmtp as { filed_messages_per_s?: number } | string;
  if (typeof peer === 'object' && peer.filed_messages_per_s) {
    for (const b of ['sqlite', 'postgres', 'document']) {
      const ours = out[`${b}_dev`] as { filed_messages_per_s?: number } | undefined;
      if (ours?.filed_messages_per_s) out[`${b}_dev_ratio_to_dovecot`] = round(ours.filed_messages_per_s / peer.filed_messages_per_s, 2);
    }
  }
  return out;
}
