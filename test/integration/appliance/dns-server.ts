import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import dnsPacket from 'dns-packet';

export type Zone = Record<string, Array<{ type: 'MX' | 'TXT' | 'CNAME' | 'SRV'; data: unknown }>>;

/** A tiny authoritative DNS server over UDP on 127.0.0.1 (dns-packet): answers from `zone`, NXDOMAIN for unknown names. */
export async function startDnsServer(zone: Zone): Promise<{ address: string; zone: Zone; close(): Promise<void> }> {
  const sock = createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions![0];
    const name = question.name.toLowerCase();
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
    sock.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
  return { address: `127.0.0.1:${(sock.address() as AddressInfo).port}`, zone, close: () => new Promise((r) => sock.close(() => r())) };
}
