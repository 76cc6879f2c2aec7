import { decodeJwt } from 'jose';
import { TokenVerifier } from '../../auth/index.js';
import { productModels, productRegistry } from '../../catalog.js';
import type { SettingName } from '../../config/index.js';
import { checkItems, dnsChecklist, nameservers } from '../../dns/index.js';
import { openSqlStore } from '../../storage/sql/adapter.js';
import { DomainModel, isAlive, listHeartbeats, MISSED_BEATS } from '../../settings/index.js';
import { sqlUrl } from '../../storage/index.js';
import { maybe } from './local-checks.js';
import { httpBase, httpGet, tcpExchange } from './probes.js';
import { checkPushDaemon } from './push-check.js';
import { fail, ok, skip, warn, type Check, type CheckResult, type DoctorContext } from './types.js';

/** The daemons this build has and how to reach them (the worker has no listener; see heartbeat). */
const DAEMON_LISTENERS: Array<{ name: string; setting: string; probe: 'status' | 'tcp' | 'push'; path?: string }> = [
  { name: 'api', setting: 'listen:api', probe: 'status' },
  { name: 'push', setting: 'listen:push', probe: 'push' }, // push-check.ts: default address too, /push/status
  // Its status answers only when the store does, and lists the plugins it loaded.
  { name: 'protocols', setting: 'listen:protocols', probe: 'status', path: '/protocols/status' },
];

export const checkDaemons: Check = async (ctx) => {
  const out: CheckResult[] = [];
  for (const d of DAEMON_LISTENERS) {
    const id = `daemon:${d.name}`;
    const title = `${d.name} daemon up and ready`;
    const address = maybe<string>(ctx, d.setting);
    if (address === undefined) { out.push(skip(id, title, `no ${d.name} daemon in this build`)); continue; }
    if (d.probe === 'push') { out.push(await checkPushDaemon(ctx, address)); continue; }
    if (d.name !== 'api' && !ctx.explicit.has(d.setting as SettingName)) { out.push(skip(id, title, `${d.setting} not configured`)); continue; }
    try {
      if (d.probe === 'status' && !address.startsWith('/')) {
        const path = d.path ?? '/api/status';
        const r = await httpGet(`${httpBase(address)}${path}`);
        out.push(r.status === 200 ? ok(id, title, `${address}: ${path} 200 ${r.text.slice(0, 160)}`)
          : fail(id, title, `${address}: ${path} answered ${r.status} ${r.text.slice(0, 120)}`, `the datastore does not answer the daemon: see the datastore check and journalctl -u svcmail-${d.name}`));
      } else {
        await tcpExchange(address, null);
        out.push(ok(id, title, `${address} accepts connections`));
      }
    } catch (e) {
      out.push(fail(id, title, `${address}: ${(e as Error).message}`, `svcmail start ${d.name} (then svcmail logs ${d.name})`));
    }
  }
  return out;
};

/** Why a token from the sign-in service fails here, in words an operator can act on. */
function tokenMismatch(ctx: DoctorContext, token: string): string {
  try {
    const claims = decodeJwt(token);
    const aud = ([] as unknown[]).concat(claims.aud ?? []);
    if (!aud.includes(ctx.config.get('auth:options:audience'))) return `audience ${JSON.stringify(claims.aud)} differs from auth:options:audience ${ctx.config.get('auth:options:audience')}`;
    if (claims.iss !== ctx.config.get('auth:options:issuer')) return `issuer ${JSON.stringify(claims.iss)} differs from auth:options:issuer ${ctx.config.get('auth:options:issuer')}`;
    return 'the signature does not verify: auth:secret differs from the sign-in service\'s secret';
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
  } catch { /* not JSON */ }
  return null;
}

export const checkSignin: Check = async (ctx) => {
  const base = ctx.config.get('mail:auth_server_url');
  const out: CheckResult[] = [];
  if (!base) return fail('signin', 'sign-in service reachable', 'mail:auth_server_url is not set', 'svcmail setup --auth-url https://auth.example.org');
  let date: string | null = null;
  try {
    const r = await httpGet(base);
    date = r.date;
    out.push(r.status < 500 ? ok('signin', 'sign-in service reachable', `${base}: HTTP ${r.status}`) : fail('signin', 'sign-in service reachable', `${base}: HTTP ${r.status}`, 'the sign-in service is failing; check its logs'));
  } catch (e) {
    return [fail('signin', 'sign-in service reachable', `${base}: ${(e as Error).message}`, 'start the sign-in service or correct mail:auth_server_url')];
  }
  const now = ctx.now?.() ?? Date.now();
  const maxSkew = ctx.config.get('mail:doctor:max_clock_skew_seconds');
  if (date) {
    const skew = Math.round((now - Date.parse(date)) / 1000);
    out.push(Math.abs(skew) > maxSkew ? fail('clock', 'clock skew', `${skew} s from the sign-in service`, 'run NTP on both hosts (timedatectl set-ntp true); tokens carry their issue and expiry times')
      : ok('clock', 'clock skew', `${skew} s from the sign-in service (limit ${maxSkew} s)`));
  } else out.push(skip('clock', 'clock skew', 'the sign-in service sent no Date header'));
  if (!ctx.signin) {
    out.push(skip('signin:token', 'a token the sign-in service issues verifies here', 'give --signin-user and --signin-password (an app password) to check it'));
    return out;
  }
  const title = 'a token the sign-in service issues verifies here';
  try {
    const basic = Buffer.from(`${ctx.signin.user}:${ctx.signin.password}`).toString('base64');
    const r = await httpGet(new URL('/api/auth/password', base).href, { headers: { authorization: `Basic ${basic}` } });
    const token = r.status === 200 ? tokenOf(r.text) : null;
    if (!token) {
      out.push(fail('signin:token', title, `GET /api/auth/password answered ${r.status}${token === null && r.status === 200 ? ' without a token' : ''}`, 'check the user and app password given to svcmail doctor'));
      return out;
    }
    try {
      const p = await new TokenVerifier(ctx.config, ctx.config.get('auth:secret')).verify(token, 'bearer');
      out.push(ok('signin:token', title, `token for ${p.uid} verifies (audience ${ctx.config.get('auth:options:audience')}, issuer ${ctx.config.get('auth:options:issuer')})`));
    } catch {
      out.push(fail('signin:token', title, tokenMismatch(ctx, token), 'make auth:secret, auth:options:audience and auth:options:issuer equal to the sign-in service\'s (svcmail config set …), then svcmail restart'));
    }
  } catch (e) {
    out.push(fail('signin:token', title, (e as Error).message, 'check that the sign-in service answers /api/auth/password'));
  }
  return out;
};

/**
 * The DNS checklist, and the domains' verified flag: an unverified domain refuses all inbound mail
 * (5.1.2 at the MTA), which nothing else would tell an administrator.
 */
export const checkDns: Check = async (ctx) => {
  const title = 'DNS checklist';
  let store;
  try {
    store = await openSqlStore({ url: sqlUrl(ctx.config), models: productModels(productRegistry()), synchronize: false, poolSize: 1 });
  } catch {
    return skip('dns', title, 'the datastore does not answer (see above)');
  }
  let items;
  let domains: Array<{ name: string; enabled: boolean; verified: boolean }> = [];
  try {
    items = await dnsChecklist(ctx.config, store).catch(() => []);
    domains = await store.repo<{ name: string; enabled: boolean; verified: boolean }>(DomainModel).list({ limit: 10_000 }).catch(() => []);
  } finally {
    await store.close();
  }
  if (items.length === 0) return skip('dns', title, 'no domain is served');
  const unverified = domains.filter((d) => d.enabled && !d.verified).map((d) => d.name);
  const verified = unverified.length
    ? fail('domains:verified', 'domains verified', `${unverified.join(', ')}: not verified, so the hand-off refuses all inbound mail for ${unverified.length > 1 ? 'them' : 'it'} (5.1.2)`,
      `publish the MX record, then svcmail dns --check verifies the domain; on a closed network: svcmail admin domains verify ${unverified[0]} --force`)
    : ok('domains:verified', 'domains verified', `${domains.filter((d) => d.enabled).length} enabled domain(s), all verified`);
  const checked = await checkItems(items, nameservers(ctx.nameservers ?? ctx.config.get('mail:dns:check_nameservers')));
  const bad = checked.filter((i) => i.status !== 'present');
  return [bad.length
    ? warn('dns', title, `${checked.length - bad.length}/${checked.length} present; ${bad.map((i) => `${i.name} ${i.type} ${i.status}`).join(', ')}`, `publish the records svcmail dns --check lists, e.g. ${bad[0].record}`)
    : ok('dns', title, `all ${checked.length} records present`), verified];
};

export const checkRedis: Check = async (ctx) => {
  const name = ['redis:url', 'mail:redis:url', 'events:redis:url'].find((n) => maybe(ctx, n) !== undefined);
  const url = name ? maybe<string>(ctx, name) : undefined;
  if (!url) return skip('redis', 'Redis reachable', 'Redis not configured (single host: the embedded event channel)');
  try {
    const u = new URL(url);
    const answer = await tcpExchange(`${u.hostname}:${u.port || 6379}`, Buffer.from(u.password ? `AUTH ${decodeURIComponent(u.password)}\r\nPING\r\n` : 'PING\r\n'), 3000, /PONG|-ERR|-NOAUTH|-WRONGPASS/);
    return /\+PONG/.test(answer) ? ok('redis', 'Redis reachable', `${u.host}: PONG`) : fail('redis', 'Redis reachable', `${u.host}: ${answer.trim()}`, `check the password in ${name}`);
  } catch (e) {
    return fail('redis', 'Redis reachable', `${url}: ${(e as Error).message}`, 'start Redis or correct the URL');
  }
};

/**
 * The worker has no listener of its own: its heartbeat records say whether it runs (recent: within
 * MISSED_BEATS of its periods, lib/admin/heartbeat.ts). Several copies each record their own.
 */
export const checkWorker: Check = async (ctx) => {
  const title = 'worker daemon running';
  const fix = 'svcmail start worker (then svcmail logs worker); inbound mail waits in the queue meanwhile';
  let beats: Awaited<ReturnType<typeof listHeartbeats>>;
  try {
    const store = await openSqlStore({ url: sqlUrl(ctx.config), models: productModels(productRegistry()), synchronize: false, poolSize: 1 });
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
  return fail('worker', title, last.stoppedAt
    ? `${last.instance} stopped at ${new Date(last.stoppedAt).toISOString()} and no worker runs since`
    : `last heartbeat from ${last.instance} ${age(last)} s ago (more than ${MISSED_BEATS} periods of ${last.intervalSeconds} s)`, fix);
};
