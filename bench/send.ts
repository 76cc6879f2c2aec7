// The send benchmark: N background sends of 10 KB messages (POST /api/mail/messages/:id/send
// {background: true} over real HTTP, 8 concurrent callers) while the send job (concurrency 4)
// relays them; relayed/s and p99 queue time (202 → handed over), on SQLite. The transport is a
// real private Postfix (Postfix's sendmail → Postfix → smtp-sink) or the sendmail-compatible
// recorder; the outbound scan uses the development clean scanner (the scanners are benched by ingest).
//   npm run bench -- send [count] [postfix|recorder]
import { drainSends } from '../lib/jobs/send.js';
import { cleanScanners } from '../lib/scan/index.js';
import { OutboundJobModel, sendDepsOf, type OutboundJob } from '../lib/send/index.js';
import { seedUsers, startTestApi } from '../test/helpers/api.js';
import { freshSqlite } from '../test/helpers/databases.js';
import { postfixAvailable, startPostfix } from '../test/helpers/postfix.js';
import { draft, recorder } from '../test/integration/send/helpers.js';
import { percentile, round } from './_stats.js';

const CALLERS = 8;

export default async function bench(args: string[]): Promise<Record<string, unknown>> {
  const count = Number(args[0] ?? 5000);
  const via = args[1] ?? (postfixAvailable() ? 'postfix' : 'recorder');
  const pf = via === 'postfix' ? await startPostfix() : null;
  const rec = via === 'recorder' ? recorder() : null;
  const api = await startTestApi(
    { name: 'sqlite', open: async () => freshSqlite() },
    {
      'mail:transport:sendmail:path': pf?.sendmail ?? rec!.bin,
      'mail:send:rate_limit:max': 1_000_000,
      'mail:jobs:send:concurrency': 4,
      'mail:jobs:wake_address': '',
    },
  );
  try {
    const users = await seedUsers(api);
    const body = `${'0123456789abcdef'.repeat(62)}\r\n`.repeat(10).slice(0, 10 * 1024);
    const drafts: string[] = [];
    for (let i = 0; i < count; i++)
      drafts.push(
        (await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: [`r${i % 50}@example.net`], subject: `bench ${i}`, body }))
          .uid,
      );
    const deps = sendDepsOf(api.deps, { scanners: cleanScanners });
    let queued = 0;
    let stop = false;
    const started = Date.now();
    const worker = (async () => {
      while (!stop || (await api.deps.store.repo(OutboundJobModel).count({ state: { $in: ['queued', 'handing', 'handed'] } })) > 0) {
        const r = await drainSends(deps, 'bench-worker');
        if (!r.claimed) await new Promise((res) => setTimeout(res, 20));
      }
    })();
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        while (queued < drafts.length) {
          const uid = drafts[queued++];
          const r = await api.call('POST', `/api/mail/messages/${uid}/send`, { token: users.alice, body: { background: true } });
          if (r.status !== 202) throw new Error(`send answered ${r.status} ${JSON.stringify(r.body)}`);
        }
      }),
    );
    const queuedAt = Date.now();
    stop = true;
    await worker;
    const done = Date.now();
    if (pf) await pf.waitFor(count, 600_000);
    const delivered = Date.now();
    const jobs = await api.deps.store.repo<OutboundJob>(OutboundJobModel).list({ limit: count + 10 });
    const waits = jobs
      .filter((j) => j.finishedAt)
      .map((j) => j.finishedAt!.getTime() - j.createdAt.getTime())
      .sort((a, b) => a - b);
    return {
      via,
      count,
      sent: jobs.filter((j) => j.state === 'sent').length,
      accepted_per_s: round(count / ((queuedAt - started) / 1000)),
      relayed_per_s: round(count / ((done - started) / 1000)),
      queue_ms_p50: percentile(waits, 50),
      queue_ms_p99: percentile(waits, 99),
      ...(pf ? { smtp_sink_received_per_s: round(count / ((delivered - started) / 1000)) } : {}),
    };
  } finally {
    await api.close();
    await pf?.stop();
  }
}
