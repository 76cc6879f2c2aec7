import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import dnsPacket from 'dns-packet';

export type Zone = Record<string, Array<{ type: 'MX' | 'TXT' | 'CNAME' | 'SRV'; data: unknown }>>;

export interface DnsServer {
  /** host:port on 127.0.0.1 */
  address: string;
  zone: Zone;
  /** Every question asked, as "TYPE name", in order. */
  queries: string[];
  close(): Promise<void>;
}

/**
 * A tiny authoritative DNS server over UDP on 127.0.0.1 (dns-packet): answers from `zone`, NXDOMAIN
 * for unknown names, after `delayMs` (a caching resolver's answer time); names `silent` matches get
 * no answer at all (a dead authoritative server: the asker waits out its time limit). Records every question.
 */
export async function startDnsServer(
  zone: Zone = {},
  opts: { delayMs?: number; silent?: (name: string) => boolean } = {},
): Promise<DnsServer> {
  const sock = createSocket('udp4');
  const queries: string[] = [];
  sock.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions![0];
    const name = question.name.toLowerCase();
    queries.push(`${question.type} ${name}`);
    if (opts.silent?.(name)) return;
    const records = zone[name];
    const answers = (records ?? [])
      .filter((r) => r.type === question.type)
      .map((r) => ({ type: r.type, name: question.name, ttl: 300, class: 'IN', data: r.data }));
    const reply = dnsPacket.encode({
      type: 'response',
      id: q.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | (records ? 0 : 3), // rcode 3: NXDOMAIN
      questions: q.questions,
      answers: answers as never,
    });
    const send = () => sock.send(reply, rinfo.port, rinfo.address);
    if (opts.delayMs) setTimeout(send, opts.delayMs).unref();
    else send();
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${(sock.address() as AddressInfo).port}`,
    zone,
    queries,
    close: () => new Promise((r) => sock.close(() => r())),
  };
}
