import { createSocket } from 'node:dgram';
import { mkdtempSync } from 'node:fs';
import dnsPacket from 'dns-packet';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureLocalCa } from '../../../lib/pki/index.js';
import type { SettingName } from '../../../lib/config/index.js';

/** Fast Argon2id for tests (the server's minimum is lowered to match). */
export const TEST_ARGON2 = { memoryKiB: 8192, iterations: 2, parallelism: 1 };

/** Settings of a test server with its own local CA. */
export async function keyTestValues(extra: Partial<Record<SettingName, unknown>> = {}): Promise<Partial<Record<SettingName, unknown>>> {
  const dir = join(mkdtempSync(join(tmpdir(), 'svcmail-keys-')), 'ca');
  await ensureLocalCa(dir);
  return { 'mail:pki:local_ca:dir': dir, 'mail:keys:argon2:min_memory_kib': 8192, 'mail:keys:lookup_floor_ms': 20, ...extra };
}

export interface TxtDns {
  /** ip:port for mail:dns:nameservers. */
  server: string;
  /** TXT answers by lowercased name; any other name is NXDOMAIN. */
  txt: Map<string, string>;
  /** A and AAAA answers by lowercased name (a function answers anew at every question: rebinding). */
  hosts: Map<string, string[] | (() => string[])>;
  /** Names never answered (a resolver that times out). */
  silent: Set<string>;
  /** How many questions for a name (lowercased), of any type or of one type, the server has received. */
  asked(name: string, type?: string): number;
  close(): void;
}

/** A real DNS server (UDP on 127.0.0.1) answering TXT, A and AAAA questions from maps. */
export async function startTxtDns(): Promise<TxtDns> {
  const txt = new Map<string, string>();
  const hosts: TxtDns['hosts'] = new Map();
  const silent = new Set<string>();
  const questions = new Map<string, number>();
  const count = (key: string) => questions.set(key, (questions.get(key) ?? 0) + 1);
  const answersFor = (name: string, type: string): dnsPacket.Answer[] | null => {
    if (type === 'TXT') return txt.has(name) ? [{ type: 'TXT', name, ttl: 60, class: 'IN', data: [txt.get(name)!] }] : null;
    const entry = hosts.get(name);
    if (!entry || (type !== 'A' && type !== 'AAAA')) return null;
    const all = typeof entry === 'function' ? entry() : entry;
    return all
      .filter((ip) => (type === 'A') === !ip.includes(':'))
      .map((ip) => ({ type, name, ttl: 0, class: 'IN', data: ip }) as dnsPacket.Answer);
  };
  const sock = createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions?.[0];
    const name = question?.name.toLowerCase() ?? '';
    count(name);
    if (question) count(`${name}|${question.type}`);
    if (silent.has(name)) return;
    const answers = question ? answersFor(name, question.type) : null;
    const exists = txt.has(name) || hosts.has(name);
    const answer = dnsPacket.encode({
      type: 'response',
      id: q.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | (exists ? 0 : 3),
      questions: q.questions,
      answers: answers ?? [],
    });
    sock.send(answer, rinfo.port, rinfo.address);
  });
  const port = await new Promise<number>((r) => sock.bind(0, '127.0.0.1', () => r(sock.address().port)));
  return {
    server: `127.0.0.1:${port}`,
    txt,
    hosts,
    silent,
    asked: (name, type) => questions.get(type ? `${name.toLowerCase()}|${type}` : name.toLowerCase()) ?? 0,
    close: () => sock.close(),
  };
}
