import { createSocket } from 'node:dgram';
import { getServers } from 'node:dns';
import { randomInt } from 'node:crypto';
import { isIPv6 } from 'node:net';
import dnsPacket from 'dns-packet';
import type { RecordType } from './checklist.js';

export interface Nameserver {
  host: string;
  port: number;
}

export interface LookupAnswer {
  /** NOERROR with answers, NOERROR without (NODATA) or NXDOMAIN all count as answered. */
  rcode: string;
  /** Answers of the asked type, normalised to zone-file text (TXT strings joined). */
  values: string[];
}

/** "127.0.0.1:5353", "[::1]:53" or "10.0.0.1" → host and port. */
export function parseNameserver(text: string): Nameserver {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(text) ?? /^([^:]+)(?::(\d+))?$/.exec(text);
  if (m) return { host: m[1], port: m[2] ? Number(m[2]) : 53 };
  return { host: text, port: 53 }; // a bare IPv6 address
}

/** The configured servers, else the system's. */
export function nameservers(configured: readonly string[]): Nameserver[] {
  const list = configured.length ? configured : getServers();
  return list.map(parseNameserver);
}

const fqdn = (s: string) => s.replace(/\.?$/, '.').toLowerCase();

function render(type: RecordType, data: unknown): string {
  switch (type) {
    case 'TXT':
      return (data as Buffer[]).map((b) => b.toString()).join('');
    case 'MX': {
      const d = data as { preference: number; exchange: string };
      return `${d.preference} ${fqdn(d.exchange)}`;
    }
    case 'CNAME':
      return fqdn(data as string);
    case 'SRV': {
      const d = data as { priority: number; weight: number; port: number; target: string };
      return `${d.priority} ${d.weight} ${d.port} ${fqdn(d.target)}`;
    }
  }
}

function askOnce(server: Nameserver, name: string, type: RecordType, timeoutMs: number): Promise<LookupAnswer> {
  return new Promise((resolve, reject) => {
    const id = randomInt(1, 65535);
    const sock = createSocket(isIPv6(server.host) ? 'udp6' : 'udp4');
    const timer = setTimeout(() => {
      sock.close();
      reject(new Error(`no answer from ${server.host}:${server.port} within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('error', (e) => {
      clearTimeout(timer);
      sock.close();
      reject(e);
    });
    sock.on('message', (msg) => {
      let packet: dnsPacket.DecodedPacket;
      try {
        packet = dnsPacket.decode(msg);
      } catch {
        return; // not a DNS answer: keep waiting
      }
      if (packet.id !== id) return;
      clearTimeout(timer);
      sock.close();
      const values = (packet.answers ?? []).filter((a) => a.type === type).map((a) => render(type, (a as { data: unknown }).data));
      resolve({ rcode: (packet as { rcode?: string }).rcode ?? 'NOERROR', values });
    });
    const query = dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name, class: 'IN' }] });
    sock.send(query, server.port, server.host);
  });
}

/** One question to the first server that answers; SERVFAIL and silence move on to the next. */
export async function lookup(servers: readonly Nameserver[], name: string, type: RecordType, timeoutMs = 2000): Promise<LookupAnswer> {
  let last: Error = new Error('no name server configured');
  for (const server of servers) {
    try {
      const answer = await askOnce(server, name, type, timeoutMs);
      if (answer.rcode === 'SERVFAIL' || answer.rcode === 'REFUSED') {
        last = new Error(`${server.host}:${server.port} answered ${answer.rcode}`);
        continue;
      }
      return answer;
    } catch (e) {
      last = e as Error;
    }
  }
  throw last;
}
