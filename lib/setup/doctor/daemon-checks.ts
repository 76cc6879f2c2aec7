import type { SettingName } from '../../config/index.js';
import { probePeer, type PeerDaemon, type PeerProbe } from './readiness.js';
import { fail, ok, warn, type CheckResult, type DoctorContext } from './types.js';

// Spec: svcmail doctor, "each daemon up and ready (... push ...)". The push and protocols daemons
// are part of every install (svcmail start runs them), so each is asked at its effective address,
// configured or default, with the probe GET /api/status uses (readiness.ts). The push daemon's
// answer also names its event transport, which must be the one this configuration selects (Redis
// when redis:url is set, else the embedded hub) or events published elsewhere never reach that copy.

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

interface PushStatus {
  status?: string;
  transport?: string;
  connections?: number;
  dropped?: number;
}
interface ProtocolsStatus {
  status?: string;
  plugins?: Array<{ name?: string; loaded?: boolean; enabled?: boolean }>;
}

const SETTING: Record<Exclude<PeerDaemon, 'worker'>, SettingName> = { push: 'listen:push', protocols: 'listen:protocols' };
const EFFECT = {
  push: 'without it clients get no live updates',
  protocols: 'without it mobile sync, MAPI and Autodiscover answer 502',
} as const;

function parse<T>(text: string | undefined): T {
  try {
    return JSON.parse(text ?? '') as T;
  } catch {
    return {} as T;
  }
}

/**
 * Nothing answered: a failure, but a warning in development while the address is left at its
 * default (a developer often runs the api daemon alone); a configured address is meant to answer.
 */
function notAnswering(ctx: DoctorContext, daemon: 'push' | 'protocols', p: PeerProbe): CheckResult {
  const id = `daemon:${daemon}`;
  const title = `${daemon} daemon up and ready`;
  const start = `svcmail start ${daemon} (then svcmail logs ${daemon})`;
  if (p.code && CONNECT_CODES.has(p.code) && ctx.config.isDevelopment && !ctx.explicit.has(SETTING[daemon])) {
    return warn(id, title, `${p.detail} (the default ${SETTING[daemon]}; NODE_ENV ${ctx.config.nodeEnv})`, `${start}; ${EFFECT[daemon]}`);
  }
  return fail(id, title, p.detail, `${start}; ${EFFECT[daemon]}`);
}

export async function checkPushDaemon(ctx: DoctorContext): Promise<CheckResult> {
  const id = 'daemon:push';
  const title = 'push daemon up and ready';
  const p = await probePeer(ctx.config, 'push', 3000);
  if (p.status === undefined) return notAnswering(ctx, 'push', p);
  const body = parse<PushStatus>(p.body);
  if (p.state !== 'ready') {
    return fail(
      id,
      title,
      `${p.address}: /push/status answered ${p.status} ${(p.body ?? '').slice(0, 120)}`,
      'something other than the push daemon answers there: check listen:push, then svcmail start push (then svcmail logs push)',
    );
  }
  const want = ctx.config.get('redis:url') ? 'redis' : 'hub';
  const detail = `${p.address}: /push/status ok, transport ${body.transport}, ${body.connections ?? 0} connections, ${body.dropped ?? 0} slow clients dropped`;
  return body.transport === want
    ? ok(id, title, detail)
    : warn(
        id,
        title,
        `${detail}; this configuration selects ${want}`,
        'the daemon runs with another configuration than this one (redis:url): svcmail restart push',
      );
}

export async function checkProtocolsDaemon(ctx: DoctorContext): Promise<CheckResult> {
  const id = 'daemon:protocols';
  const title = 'protocols daemon up and ready';
  const p = await probePeer(ctx.config, 'protocols', 3000);
  if (p.status === undefined) return notAnswering(ctx, 'protocols', p);
  const body = parse<ProtocolsStatus>(p.body);
  if (p.state === 'ready') {
    const plugins = body.plugins ?? [];
    const failed = plugins.filter((x) => !x.loaded).map((x) => x.name);
    const loaded = plugins.filter((x) => x.loaded).map((x) => `${x.name}${x.enabled === false ? ' (disabled)' : ''}`);
    const detail = `${p.address}: /protocols/status 200; plugins: ${loaded.join(', ') || 'none'}`;
    return failed.length
      ? warn(id, title, `${detail}; failed to load: ${failed.join(', ')}`, 'svcmail logs protocols says why the plugin failed to load')
      : ok(id, title, detail);
  }
  return p.status === 503
    ? fail(
        id,
        title,
        `${p.address}: /protocols/status answered 503 ${(p.body ?? '').slice(0, 120)}`,
        'the datastore does not answer the protocols daemon: see the datastore check and svcmail logs protocols',
      )
    : fail(
        id,
        title,
        `${p.address}: /protocols/status answered ${p.status} ${(p.body ?? '').slice(0, 120)}`,
        'something other than the protocols daemon answers there: check listen:protocols, then svcmail start protocols (then svcmail logs protocols)',
      );
}
