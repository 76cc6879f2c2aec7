import { decodeJwt } from 'jose';
import { TokenVerifier } from '../../auth/index.js';
import { productModels, productRegistry } from '../../catalog.js';
import { checkItems, dnsChecklist, nameservers, verdicts, type RecordStatus } from '../../dns/index.js';
import { openStoreToCheck } from '../../storage/index.js';
import { DomainModel, isAlive, listHeartbeats, MISSED_BEATS } from '../../settings/index.js';
import { maybe } from './local-checks.js';
import { httpGet, httpGetAt, tcpExchange } from './probes.js';
import { checkProtocolsDaemon, checkPushDaemon } from './daemon-checks.js';
import { isPeerDaemon } from './readiness.js';
import { fail, ok, skip, warn, type Check, type CheckResult, type DoctorContext } from './types.js';

/**
 * Spec: svcmail doctor, "each daemon up and ready". Every daemon `svcmail start` runs is checked at
 * its effective address, configured or default, as the daemon itself reads it: the api daemon's
 * /api/status (which also says whether the daemons it forwards to answer), the push daemon's
 * /push/status (push-check.ts) and the protocols daemon's /protocols/status, the same probe
 * /api/status uses (readiness.ts). The worker has no status listener: its heartbeats say whether
 * it runs (checkWorker).
 */
export const checkDaemons: Check = async (ctx) => Promise.all([checkApiDaemon(ctx), checkPushDaemon(ctx), checkProtocolsDaemon(ctx)]);

async function checkApiDaemon(ctx: DoctorContext): Promise<CheckResult> {
  const id = 'daemon:api';
  const title = 'api daemon up and ready';
  const address = ctx.config.get('listen:api');
  let r: { status: number; text: string };
  try {
    r = await httpGetAt(address, '/api/status');
  } catch (e) {
    return fail(
      id,
      title,
      `${address}: ${(e as { code?: string }).code ?? (e as Error).message}`,
      'svcmail start api (then svcmail logs api)',
    );
  }
  if (r.status === 200) return ok(id, title, `${address}: /api/status 200 ${r.text.slice(0, 160)}`);
  let body: { message?: string; details?: Array<{ path?: string }> } = {};
  try {
    body = JSON.parse(r.text) as typeof body;
  } catch {
    /* judged below */
  }
  const daemons = (body.details ?? []).map((d) => d.path).filter((d): d is string => Boolean(d) && isPeerDaemon(d!));
  return fail(
    id,
    title,
    `${address}: /api/status answered ${r.status} ${(body.message ?? r.text).slice(0, 160)}`,
    daemons.length
      ? `start ${daemons.length > 1 ? 'them' : 'it'}: ${daemons.map((d) => `svcmail start ${d}`).join(', ')} (see ${daemons.length > 1 ? 'their rows' : 'its row'} below; svcmail logs ${daemons[0]})`
      : 'the datastore does not answer the daemon: see the datastore check and svcmail logs api',
  );
}

/** Why a token from the sign-in service fails here, in words an operator can act on. */
function tokenMismatch(ctx: DoctorContext, token: string): string {
  try {
    const claims = decodeJwt(token);
    const aud = ([] as unknown[]).concat(claims.aud ?? []);
    if (!aud.includes(ctx.config.get('auth:options:audience')))
      return `audience ${JSON.stringify(claims.aud)} differs from auth:options:audience ${ctx.config.get('auth:options:audience')}`;
    if (claims.iss !== ctx.config.get('auth:options:issuer'))
      return `issuer ${JSON.stringify(claims.iss)} differs from auth:options:issuer ${ctx.config.get('auth:options:issuer')}`;
    return "the signature does not verify: auth:secret differs from the sign-in service's secret";
  } catch {
    return 'the sign-in service answered something that is not a JWT';
  }
}

function tokenOf(text: string): string | null {
  const t = text.trim();
  if (/^[\w-]+\.[\w-]+\.[\w-]+$/.test(t)) return t;
  try {
    const body = JSON.parse(t) as Record<string, unknown>;
    for (const k of ['token', 'accessToken', 'access_token', 'jwt']) if (typeof body[k] === 'string') return body[k] as string;
  } catch {
    /* not JSON */
  }
  return null;
}

const CLOCK = 'clock skew';
const TOKEN = 'a token the sign-in service issues verifies here';
/** The clock is read from the sign-in service's Date header: without an answer it cannot be compared, which doctor says rather than leaving the row out. */
const clockUnchecked = (why: string, fix: string) =>
  skip('clock', CLOCK, `not checked: ${why}; the clock is compared with the Date header of the sign-in service's answer`, fix);
const OWN_CLOCK = 'meanwhile check that NTP keeps this host\'s clock (timedatectl: "System clock synchronized: yes")';

export const checkSignin: Check = async (ctx) => {
  const base = ctx.config.get('mail:auth_server_url');
  const out: CheckResult[] = [];
  if (!base) {
    const fix = 'svcmail setup --auth-url https://auth.example.org';
    return [
      fail('signin', 'sign-in service reachable', 'mail:auth_server_url is not set', fix),
      clockUnchecked('mail:auth_server_url is not set', `${fix}, then svcmail doctor again; ${OWN_CLOCK}`),
      skip('signin:token', TOKEN, 'not checked: mail:auth_server_url is not set'),
    ];
  }
  let date: string | null = null;
  try {
    const r = await httpGet(base);
    date = r.date;
    out.push(
      r.status < 500
        ? ok('signin', 'sign-in service reachable', `${base}: HTTP ${r.status}`)
        : fail('signin', 'sign-in service reachable', `${base}: HTTP ${r.status}`, 'the sign-in service is failing; check its logs'),
    );
  } catch (e) {
    const why = `the sign-in service at ${base} does not answer (${(e as Error).message})`;
    const fix = 'start the sign-in service or correct mail:auth_server_url';
    return [
      fail('signin', 'sign-in service reachable', `${base}: ${(e as Error).message}`, fix),
      clockUnchecked(why, `${fix}, then svcmail doctor again; ${OWN_CLOCK}`),
      skip('signin:token', TOKEN, `not checked: ${why}`, `${fix}, then svcmail doctor again`),
    ];
  }
  const now = ctx.now?.() ?? Date.now();
  const maxSkew = ctx.config.get('mail:doctor:max_clock_skew_seconds');
  if (date) {
    const skew = Math.round((now - Date.parse(date)) / 1000);
    out.push(
      Math.abs(skew) > maxSkew
        ? fail(
            'clock',
            CLOCK,
            `${skew} s from the sign-in service`,
            'run NTP on both hosts (timedatectl set-ntp true); tokens carry their issue and expiry times',
          )
        : ok('clock', CLOCK, `${skew} s from the sign-in service (limit ${maxSkew} s)`),
    );
  } else
    out.push(
      clockUnchecked(
        'the sign-in service sent no Date header',
        `have the sign-in service (or the proxy in front of it) send Date; ${OWN_CLOCK}`,
      ),
    );
  if (!ctx.signin) {
    out.push(skip('signin:token', TOKEN, 'give --signin-user and --signin-password (an app password) to check it'));
    return out;
  }
  const title = TOKEN;
  try {
    const basic = Buffer.from(`${ctx.signin.user}:${ctx.signin.password}`).toString('base64');
    const r = await httpGet(new URL('/api/auth/password', base).href, { headers: { authorization: `Basic ${basic}` } });
    const token = r.status === 200 ? tokenOf(r.text) : null;
    if (!token) {
      out.push(
        fail(
          'signin:token',
          title,
          `GET /api/auth/password answered ${r.status}${token === null && r.status === 200 ? ' without a token' : ''}`,
          'check the user and app password given to svcmail doctor',
        ),
      );
      return out;
    }
    try {
      const p = await new TokenVerifier(ctx.config, ctx.config.get('auth:secret')).verify(token, 'bearer');
      out.push(
        ok(
          'signin:token',
          title,
          `token for ${p.uid} verifies (audience ${ctx.config.get('auth:options:audience')}, issuer ${ctx.config.get('auth:options:issuer')})`,
        ),
      );
    } catch {
      out.push(
        fail(
          'signin:token',
          title,
          tokenMismatch(ctx, token),
          "make auth:secret, auth:options:audience and auth:options:issuer equal to the sign-in service's (svcmail config set …), then svcmail restart",
        ),
      );
    }
  } catch (e) {
    out.push(fail('signin:token', title, (e as Error).message, 'check that the sign-in service answers /api/auth/password'));
  }
  return out;
};

/**
 * A record's state in the words svcmail dns --check uses (its summary line): present, missing
 * (nothing of its kind published), wrong (something else published), and "not checked" when the
 * lookup itself failed, which says nothing about what is published.
 */
const RECORD_WORDS: Record<RecordStatus, string> = { present: 'present', missing: 'missing', wrong: 'wrong', error: 'not checked' };

/**
 * The DNS checklist, and the domains' verified flag: an unverified domain refuses all inbound mail
 * (5.1.2 at the MTA), which nothing else would tell an administrator. Both are read as svcmail dns
 * --check reads them (lib/dns: checkItems and verdicts), but doctor only reports: it verifies nothing.
 */
export const checkDns: Check = async (ctx) => {
  const title = 'DNS checklist';
  let store;
  try {
    store = await openStoreToCheck(ctx.config, productModels(productRegistry()));
  } catch {
    return skip('dns', title, 'the datastore does not answer (see above)');
  }
  let items;
  let domains: Array<{ name: string; enabled: boolean; verified: boolean }> = [];
  try {
    items = await dnsChecklist(ctx.config, store).catch(() => []);
    domains = await store
      .repo<{ name: string; enabled: boolean; verified: boolean }>(DomainModel)
      .list({ limit: 10_000 })
      .catch(() => []);
  } finally {
    await store.close();
  }
  if (items.length === 0) return skip('dns', title, 'no domain is served');
  const checked = await checkItems(items, nameservers(ctx.nameservers ?? ctx.config.get('mail:dns:check_nameservers')));
  const byDomain = new Map(verdicts(checked, new Map(domains.map((d) => [d.name, d.verified]))).map((v) => [v.domain, v]));

  const unverified = domains.filter((d) => d.enabled && !d.verified).map((d) => d.name);
  const mxHere = unverified.filter((d) => byDomain.get(d)?.changed);
  const mxRecord = byDomain.get(unverified[0])?.missing.find((m) => m.purpose === 'mx')?.record;
  const verified = unverified.length
    ? fail(
        'domains:verified',
        'domains verified',
        `${unverified.join(', ')}: not verified, so the hand-off refuses all inbound mail for ${unverified.length > 1 ? 'them' : 'it'} (5.1.2)${mxHere.length ? `; the MX of ${mxHere.join(', ')} already points here` : ''}`,
        mxHere.length === unverified.length
          ? 'svcmail dns --check verifies the domain now (its MX points here)'
          : `publish the MX record${mxRecord ? ` ${mxRecord}` : ''}, then svcmail dns --check verifies the domain; on a closed network: svcmail admin domains verify ${unverified.find((d) => !mxHere.includes(d))} --force`,
      )
    : ok('domains:verified', 'domains verified', `${domains.filter((d) => d.enabled).length} enabled domain(s), all verified`);

  const present = checked.filter((i) => i.status === 'present').length;
  if (present === checked.length) return [ok('dns', title, `all ${checked.length} records present`), verified];
  const groups = (['missing', 'wrong', 'error'] as const)
    .map((status) => {
      const list = checked.filter((i) => i.status === status);
      return list.length ? `${RECORD_WORDS[status]}: ${list.map((i) => `${i.name} ${i.type}`).join(', ')}` : '';
    })
    .filter(Boolean);
  const firstBad = checked.find((i) => i.status === 'missing' || i.status === 'wrong');
  const failed = checked.find((i) => i.status === 'error');
  const fixes = [
    firstBad ? `publish the records svcmail dns --check lists, e.g. ${firstBad.record}` : '',
    failed
      ? `the lookups that failed (${failed.fix?.replace(/^could not look up [^:]+: /, '') ?? 'no answer'}) are not checked: give doctor --resolver <ip> or set mail:dns:check_nameservers to a name server that answers`
      : '',
  ].filter(Boolean);
  return [warn('dns', title, `${present}/${checked.length} present; ${groups.join('; ')}`, fixes.join('; ')), verified];
};

export const checkRedis: Check = async (ctx) => {
  const name = ['redis:url', 'mail:redis:url', 'events:redis:url'].find((n) => maybe(ctx, n) !== undefined);
  const url = name ? maybe<string>(ctx, name) : undefined;
  if (!url) return skip('redis', 'Redis reachable', 'Redis not configured (single host: the embedded event channel)');
  const sentinels = ctx.config.get('redis:sentinels');
  let via = '';
  try {
    const u = new URL(url);
    let address = `${u.hostname}:${u.port || 6379}`;
    if (sentinels.length) {
      const found = await masterFromSentinels(sentinels, ctx.config.get('redis:sentinel_name'));
      if (!found)
        return fail(
          'redis',
          'Redis reachable',
          `no Sentinel of ${sentinels.join(', ')} names a master for ${ctx.config.get('redis:sentinel_name')}`,
          'start the Sentinels, or correct redis:sentinels and redis:sentinel_name',
        );
      [address, via] = [found.master, ` (the master Sentinel ${found.sentinel} names)`];
    }
    const answer = await tcpExchange(
      address,
      Buffer.from(u.password ? `AUTH ${decodeURIComponent(u.password)}\r\nPING\r\n` : 'PING\r\n'),
      3000,
      /PONG|-ERR|-NOAUTH|-WRONGPASS/,
    );
    return /\+PONG/.test(answer)
      ? ok('redis', 'Redis reachable', `${address}${via}: PONG`)
      : fail('redis', 'Redis reachable', `${address}${via}: ${answer.trim()}`, `check the password in ${name}`);
  } catch (e) {
    return fail('redis', 'Redis reachable', `${url}: ${(e as Error).message}`, 'start Redis or correct the URL');
  }
};

/** The master the first answering Sentinel names (SENTINEL get-master-addr-by-name), or null. */
async function masterFromSentinels(sentinels: string[], name: string): Promise<{ master: string; sentinel: string } | null> {
  for (const sentinel of sentinels) {
    const answer = await tcpExchange(
      sentinel,
      Buffer.from(`SENTINEL get-master-addr-by-name ${name}\r\n`),
      3000,
      /^\*-1|^-|^\*2\r\n\$\d+\r\n[^\r]*\r\n\$\d+\r\n\d+\r\n/,
    ).catch(() => '');
    const m = /^\*2\r\n\$\d+\r\n([^\r]*)\r\n\$\d+\r\n(\d+)\r\n/.exec(answer);
    if (m) return { master: `${m[1].includes(':') ? `[${m[1]}]` : m[1]}:${m[2]}`, sentinel };
  }
  return null;
}

/**
 * The worker has no listener of its own: its heartbeat records say whether it runs (recent: within
 * MISSED_BEATS of its periods, lib/settings/heartbeat.ts). Several copies each record their own.
 */
export const checkWorker: Check = async (ctx) => {
  const title = 'worker daemon running';
  const fix = 'svcmail start worker (then svcmail logs worker); inbound mail waits in the queue meanwhile';
  let beats: Awaited<ReturnType<typeof listHeartbeats>>;
  try {
    const store = await openStoreToCheck(ctx.config, productModels(productRegistry()));
    try {
      beats = await listHeartbeats(store, { daemon: 'worker' });
    } finally {
      await store.close();
    }
  } catch (e) {
    return skip('worker', title, `heartbeats cannot be read: ${(e as Error).message.slice(0, 120)}`);
  }
  const now = ctx.now?.() ?? Date.now();
  const age = (b: { lastSeenAt: Date }) => Math.round((now - new Date(b.lastSeenAt).getTime()) / 1000);
  const alive = beats.filter((b) => isAlive(b, now));
  if (alive.length) return ok('worker', title, alive.map((b) => `${b.instance}: heartbeat ${age(b)} s ago`).join('; '));
  const last = beats[0];
  if (!last) return warn('worker', title, 'no worker has recorded a heartbeat yet', fix);
  return fail(
    'worker',
    title,
    last.stoppedAt
      ? `${last.instance} stopped at ${new Date(last.stoppedAt).toISOString()} and no worker runs since`
      : `last heartbeat from ${last.instance} ${age(last)} s ago (more than ${MISSED_BEATS} periods of ${last.intervalSeconds} s)`,
    fix,
  );
};
