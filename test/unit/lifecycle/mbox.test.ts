// mboxrd round trip: what export writes, import reads back byte for byte (CRLF, "From " lines in
// bodies, already-quoted ">From ", a missing final line end, binary ciphertext), and an oversized
// message is reported without stopping the rest.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromLine, mboxEntry, splitMbox } from '../../../lib/mail/index.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
async function* chunks(buf: Buffer, size: number) {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}
async function collect(buf: Buffer, max = 1_000_000, chunk = 7) {
  const out = [];
  for await (const item of splitMbox(chunks(buf, chunk), max)) out.push(item);
  return out;
}

const MESSAGES = [
  Buffer.from('From: a@example.net\r\nSubject: crlf\r\n\r\nFrom here on\r\n>From quoted\r\n>>From twice\r\nend\r\n'),
  Buffer.from('From: b@example.net\nSubject: lf, no final newline\n\nlast line'),
  Buffer.concat([
    Buffer.from('From: c@example.net\r\nContent-Type: application/pkcs7-mime; smime-type=enveloped-data\r\n\r\n'),
    Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 37) % 256)),
    Buffer.from('\r\n'),
  ]),
  Buffer.from('From: d@example.net\n\n\nFrom \nFrom\n'),
];

describe('mbox (mboxrd)', () => {
  it('round-trips messages byte for byte whatever the chunking', async () => {
    const mbox = Buffer.concat(MESSAGES.map((m, i) => mboxEntry(m, `s${i}@example.net`, new Date(Date.UTC(2026, 0, i + 1)))));
    for (const chunk of [1, 7, 4096, 1 << 20]) {
      const items = await collect(mbox, 1_000_000, chunk);
      expect(items).toHaveLength(MESSAGES.length);
      items.forEach((item, i) => {
        expect('raw' in item).toBe(true);
        const raw = (item as { raw: Buffer }).raw;
        // A message without a final line end gets one (the manifest's size takes it back off on import).
        const want = MESSAGES[i][MESSAGES[i].length - 1] === 0x0a ? MESSAGES[i] : Buffer.concat([MESSAGES[i], Buffer.from('\n')]);
        expect(sha(raw)).toBe(sha(want));
      });
    }
    expect(mbox.toString('latin1')).toContain('\r\n>From here on\r\n>>From quoted\r\n>>>From twice');
  });

  it('reports an oversized message and goes on with the next', async () => {
    const big = Buffer.from(`From: big@example.net\n\n${'x'.repeat(5000)}\n`);
    const mbox = Buffer.concat([
      mboxEntry(MESSAGES[0], 'a@example.net', new Date()),
      mboxEntry(big, 'big@example.net', new Date()),
      mboxEntry(MESSAGES[1], 'b@example.net', new Date()),
    ]);
    const items = await collect(mbox, 1000);
    expect(items.map((i) => ('error' in i ? 'error' : 'raw'))).toEqual(['raw', 'error', 'raw']);
    expect((items[1] as { error: string }).error).toMatch(/max_message_bytes/);
  });

  it('refuses input that is not an mbox file, and writes an asctime separator', async () => {
    await expect(collect(Buffer.from('Subject: not mbox\n\nbody\n'))).rejects.toThrow(/not an mbox file/);
    expect(fromLine('x@example.net', new Date(Date.UTC(2026, 1, 3, 4, 5, 6))).toString()).toBe(
      'From x@example.net Tue Feb  3 04:05:06 2026\n',
    );
    expect(fromLine('not an address', new Date(0)).toString()).toBe('From MAILER-DAEMON Thu Jan  1 00:00:00 1970\n');
  });
});
