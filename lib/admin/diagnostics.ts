import { Config, schema, type SettingName } from '../config/index.js';
import { INGEST_STATES, IngestEntryModel, OutboundHandoffModel } from '../ingest/index.js';
import type { Deps } from '../context/index.js';
import { clamdScan, rspamdCheck } from '../scan/index.js';
import { OUTBOUND_STATES, OutboundJobModel } from '../send/index.js';
import { outboundTransport } from '../send/index.js';
import type { ModelDef, Store } from '../storage/index.js';
import { PRODUCT } from '../version.js';
import { isAlive, listHeartbeats } from '../settings/index.js';

// Spec: GET /api/admin/diagnostics — versions, daemon heartbeats, queue depths, scanner and
// transport reachability (body not shown in the spec; designed here). Read-only: a trusted role.

export const DAEMONS = ['api', 'worker', 'push', 'protocols'] as const;

export interface Probe {
  reachable: boolean;
  detail: string;
  ms: number;
}

/** The same configuration with one setting changed (the probes' short scanner timeout). */
function withSetting<K extends SettingName>(config: Config, name: K, value: unknown): Config {
  const values = new Map<SettingName, unknown>((Object.keys(schema) as SettingName[]).map((n) => [n, config.get(n)]));
  values.set(name, value);
  return new Config(values, config.nodeEnv, config.file);
}

async function timed(fn: () => Promise<string>): Promise<Probe> {
  const t0 = Date.now();
  try {
    return { reachable: true, detail: await fn(), ms: Date.now() - t0 };
  } catch (e) {
    return { reachable: false, detail: (e as Error).message.slice(0, 300), ms: Date.now() - t0 };
  }
}

// A tiny message: scanning it is the cheapest request the real clients make.
const PROBE_MESSAGE = Buffer.from(
  'From: diagnostics@localhost\r\nTo: diagnostics@localhost\r\nSubject: svcmail diagnostics probe\r\nMessage-ID: <probe@localhost>\r\n\r\nprobe\r\n',
);

/** rspamd and clamd through the lib/scan clients, with mail:diagnostics:probe_timeout_ms. */
export async function probeScanners(config: Config): Promise<{ rspamd: Probe; clamd: Probe }> {
  const short = withSetting(config, 'mail:scan:timeout_ms', config.get('mail:diagnostics:probe_timeout_ms'));
  const [rspamd, clamd] = await Promise.all([
    timed(
      async () => `${config.get('mail:scan:rspamd:url')}: answered (action ${(await rspamdCheck(short, { raw: PROBE_MESSAGE })).action})`,
    ),
    timed(
      async () =>
        `${config.get('mail:scan:clamd:address')}: answered (${(await clamdScan(short, PROBE_MESSAGE)).infected ? 'FOUND' : 'OK'})`,
    ),
  ]);
  return { rspamd, clamd };
}

/** The sendmail command is executable, or the cloud API answers HTTP at all. */
export async function probeTransport(config: Config): Promise<Probe & { provider: string }> {
  const transport = outboundTransport(config);
  const provider = transport.name;
  const probe = await timed(async () => {
    if (provider === 'development') return 'development without a sendmail binary: local recipients only, external ones are refused';
    await transport.check();
    if (config.get('mail:transport:provider') !== 'api') return `${config.get('mail:transport:sendmail:path')} is executable`;
    const url = config.get('mail:transport:api:url');
    const res = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(config.get('mail:diagnostics:probe_timeout_ms')) });
    return `${new URL(url).origin} answered HTTP ${res.status}`;
  });
  return { provider, ...probe };
}

async function byState(store: Store, model: ModelDef, states: readonly string[]): Promise<Record<string, number>> {
  const counts = await Promise.all(states.map((state) => store.repo(model).count({ state })));
  return Object.fromEntries(states.map((s, i) => [s, counts[i]]));
}

/** The whole diagnostics answer; `problems` names what an operator should look at first. */
export async function diagnostics(deps: Pick<Deps, 'config' | 'store'>) {
  const { config, store } = deps;
  const now = Date.now();
  const [datastoreVersion, beats, ingest, outbound, handoffs, scanners, transport] = await Promise.all([
    store.serverVersion ? store.serverVersion().catch((e: unknown) => `unknown (${(e as Error).message})`) : Promise.resolve('unknown'),
    listHeartbeats(store),
    byState(store, IngestEntryModel, INGEST_STATES),
    byState(store, OutboundJobModel, OUTBOUND_STATES),
    byState(store, OutboundHandoffModel, ['queued', 'sent', 'failed']),
    probeScanners(config),
    probeTransport(config),
  ]);
  const names = [...new Set([...DAEMONS, ...beats.map((b) => b.daemon)])];
  const daemons = names.map((daemon) => {
    const processes = beats
      .filter((b) => b.daemon === daemon)
      .map((b) => ({
        instance: b.instance,
        host: b.host,
        pid: b.pid,
        version: b.productVersion,
        startedAt: b.startedAt,
        lastSeenAt: b.lastSeenAt,
        ageSeconds: Math.round((now - new Date(b.lastSeenAt).getTime()) / 1000),
        intervalSeconds: b.intervalSeconds,
        stoppedAt: b.stoppedAt,
        alive: isAlive(b, now),
        details: b.details,
      }));
    return { daemon, alive: processes.filter((p) => p.alive).length, processes };
  });
  const problems: string[] = [];
  for (const d of daemons)
    if (d.daemon !== 'protocols' && d.alive === 0) problems.push(`no ${d.daemon} daemon has sent a heartbeat recently`);
  if (!scanners.rspamd.reachable) problems.push(`rspamd unreachable: ${scanners.rspamd.detail}`);
  if (!scanners.clamd.reachable) problems.push(`clamd unreachable: ${scanners.clamd.detail}`);
  if (!transport.reachable) problems.push(`mail transport: ${transport.detail}`);
  if (ingest.failed) problems.push(`${ingest.failed} ingest entries failed (see /api/mail/ingest-queue?state=failed)`);
  if (outbound.review) problems.push(`${outbound.review} sends wait for review after an interrupted hand-off`);
  return {
    generatedAt: new Date(now),
    status: problems.length ? ('degraded' as const) : ('ok' as const),
    problems,
    versions: {
      product: PRODUCT.version,
      name: PRODUCT.name,
      node: process.version,
      datastore: { kind: store.kind, version: datastoreVersion },
    },
    daemons,
    queues: { ingest, outbound, handoffs },
    scanners,
    transport,
  };
}
