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
  /** Names never answered (a resolver that times out). */
  silent: Set<string>;
  /** How many questions for a name (lowercased) the server has received. */
  asked(name: string): number;
  close(): void;
}

/** A real DNS server (UDP on 127.0.0.1) answering TXT questions from a map. */
export async function startTxtDns(): Promise<TxtDns> {
  const txt = new Map<string, string>();
  const silent = new Set<string>();
  const questions = new Map<string, number>();
  const sock = createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions?.[0];
    const name = question?.name.toLowerCase() ?? '';
    questions.set(name, (questions.get(name) ?? 0) + 1);
    if (silent.has(name)) return;
    const value = question && question.type === 'TXT' ? txt.get(name) : undefined;
    const answer = dnsPacket.encode({
      type: 'response', id: q.id, flags: dnsPacket.AUTHORITATIVE_ANSWER | (value ? 0 : 3), questions: q.questions,
      answers: value ? [{ type: 'TXT', name: question!.name, ttl: 60, class: 'IN', data: [value] }] : [],
    });
    sock.send(answer, rinfo.port, rinfo.address);
  });
  const port = await new Promise<number>((r) => sock.bind(0, '127.0.0.1', () => r(sock.address().port)));
  return { server: `127.0.0.1:${port}`, txt, silent, asked: (name) => questions.get(name.toLowerCase()) ?? 0, close: () => sock.close() };
}
