import { Resolver } from 'node:dns/promises';
import dnsPacket from 'dns-packet';
import type { Config } from '../config/index.js';
import type { HostResolver } from '../http/index.js';

// Spec: Finding the server from an address. TXT `_svc.<domain>`: `v=SVCv1; id=<id>; host=<host>;`,
// through node's resolver or DNS over HTTPS with DNSSEC validation required (mail:dns:resolver).

export interface SvcRecord {
  id: string;
  host: string;
}

// host= names a host (Spec: Other shapes): a name of two or more labels whose last starts with a
// letter. No port (the port is mail:keys:federation:url_template's) and no IP literal; whatever the
// name resolves to is checked again where the connection is made (lib/http/outbound.ts).
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOST = new RegExp(`^(?=.{1,253}$)(?:${LABEL}\\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$`, 'i');

/** Parses one TXT string; null unless it is a well-formed v=SVCv1 record. */
export function parseSvcRecord(txt: string): SvcRecord | null {
  const fields = new Map<string, string>();
  for (const part of txt.split(';')) {
    const p = part.trim();
    if (!p) continue;
    const eq = p.indexOf('=');
    if (eq < 1) return null;
    fields.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim());
  }
  if (fields.get('v') !== 'SVCv1') return null;
  const id = fields.get('id');
  const host = fields.get('host')?.toLowerCase().replace(/\.$/, '');
  if (!id || !/^[A-Za-z0-9_-]{1,64}$/.test(id) || !host || !HOST.test(host)) return null;
  return { id, host };
}

function systemResolver(config: Config, signal?: AbortSignal): { r: Resolver; done: () => void } {
  const r = new Resolver({ timeout: config.get('mail:dns:timeout_ms'), tries: 2 });
  const servers = config.get('mail:dns:nameservers');
  if (servers.length) r.setServers(servers);
  // a caller that stops waiting cancels the question, so nothing lingers until the resolver timeout
  const cancel = () => r.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  return { r, done: () => signal?.removeEventListener('abort', cancel) };
}

/** No such name, or no record of the type: an empty answer, not an error. */
async function orEmpty<T>(q: Promise<T[]>): Promise<T[]> {
  try {
    return await q;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'ENOTFOUND' || code === 'ENODATA') return [];
    throw e;
  }
}

async function txtSystem(config: Config, name: string, signal?: AbortSignal): Promise<string[]> {
  const { r, done } = systemResolver(config, signal);
  try {
    return (await orEmpty(r.resolveTxt(name))).map((chunks) => chunks.join(''));
  } finally {
    done();
  }
}

/**
 * RFC 8484 POST. The _svc TXT answer must carry the AD bit (validated by the resolver), else it is
 * refused; a host's addresses need not (`validated: false`): TLS proves who answers there, and the
 * peer's host may sit in an unsigned zone.
 */
async function doh(
  config: Config,
  name: string,
  type: 'TXT' | 'A' | 'AAAA',
  signal?: AbortSignal,
  validated = true,
): Promise<dnsPacket.Answer[]> {
  const query = dnsPacket.encode({
    type: 'query',
    id: 0,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
    additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 4096, flags: dnsPacket.DNSSEC_OK } as unknown as dnsPacket.Answer],
  });
  const res = await fetch(config.get('mail:dns:doh_url'), {
    method: 'POST',
    redirect: 'error',
    headers: { 'content-type': 'application/dns-message', accept: 'application/dns-message' },
    body: query,
    signal: AbortSignal.any([AbortSignal.timeout(config.get('mail:dns:timeout_ms')), ...(signal ? [signal] : [])]),
  });
  if (!res.ok) throw new Error(`DoH answered HTTP ${res.status}`);
  const packet = dnsPacket.decode(Buffer.from(await res.arrayBuffer()));
  const flags = (packet as { flags?: number }).flags ?? 0;
  if (validated && !(flags & dnsPacket.AUTHENTIC_DATA)) throw new Error(`the DoH answer for ${name} is not DNSSEC-validated (no AD bit)`);
  const rcode = (packet as { rcode?: string }).rcode;
  if (rcode === 'NXDOMAIN') return [];
  if (rcode && rcode !== 'NOERROR') throw new Error(`DoH answered ${rcode}`);
  return (packet.answers ?? []).filter((a) => a.type === type);
}

async function txtDoh(config: Config, name: string, signal?: AbortSignal): Promise<string[]> {
  return (await doh(config, name, 'TXT', signal)).map((a) => (a as { data: Buffer[] }).data.map((b) => b.toString()).join(''));
}

/**
 * The addresses (A and AAAA) of a host named by a _svc record, through the same resolver as the
 * record itself (mail:dns:resolver, mail:dns:nameservers), not the system's getaddrinfo: the
 * outbound check (lib/http/outbound.ts) connects to exactly these.
 */
export function svcHostResolver(config: Config): HostResolver {
  return async (host, signal) => {
    if (config.get('mail:dns:resolver') === 'doh-dnssec') {
      const answers = await Promise.all([doh(config, host, 'A', signal, false), doh(config, host, 'AAAA', signal, false)]);
      return answers.flat().map((a) => (a as { data: string }).data);
    }
    const { r, done } = systemResolver(config, signal);
    try {
      return (await Promise.all([orEmpty(r.resolve4(host)), orEmpty(r.resolve6(host))])).flat();
    } finally {
      done();
    }
  };
}

/** The _svc record of a domain, or null when it has none; an aborted signal cancels the question. */
export async function findSvcRecord(config: Config, domain: string, signal?: AbortSignal): Promise<SvcRecord | null> {
  const name = `_svc.${domain}`;
  const txts =
    config.get('mail:dns:resolver') === 'doh-dnssec' ? await txtDoh(config, name, signal) : await txtSystem(config, name, signal);
  for (const t of txts) {
    const rec = parseSvcRecord(t);
    if (rec) return rec;
  }
  return null;
}
