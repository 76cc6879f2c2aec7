import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiTransport, sendmailTransport, type Transport } from '../../../lib/send/index.js';

const raw = Buffer.from('From: a@example.test\r\nTo: b@example.net\r\nSubject: hi\r\n\r\nbody\r\n.\r\nafter a dot line\r\n');

describe('sendmail transport (a recorder that behaves like sendmail)', () => {
  let dir: string;
  let bin: string;
  let t: Transport;
  beforeAll(() => {
    const binDir = mkdtempSync(join(tmpdir(), 'svcmail-sendmail-'));
    bin = join(binDir, 'sendmail');
    copyFileSync(new URL('../../fixtures/sendmail-recorder.sh', import.meta.url), bin);
    dir = mkdtempSync(join(tmpdir(), 'svcmail-rec-'));
    writeFileSync(join(binDir, 'recorder-dir'), dir);
    t = sendmailTransport({ path: bin, timeoutMs: 2000 });
  });
  beforeEach(() => {
    for (const f of readdirSync(dir)) rmSync(join(dir, f));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const runs = () =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.args'))
      .sort()
      .map((f) => ({
        args: readFileSync(join(dir, f), 'utf8').trim().split('\n'),
        eml: readFileSync(join(dir, f.replace('.args', '.eml'))),
      }));

  it('hands the raw message over once with -i -f FROM -- RCPTS and reports every recipient accepted', async () => {
    const r = await t.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['b@example.net', 'c@example.net'] });
    expect(r).toEqual({ accepted: ['b@example.net', 'c@example.net'], refused: [] });
    const [run, ...more] = runs();
    expect(more).toHaveLength(0);
    expect(run.args).toEqual(['-i', '-f', 'a@example.test', '--', 'b@example.net', 'c@example.net']);
    expect(run.eml.equals(raw)).toBe(true);
  });

  it('tells refused recipients from accepted ones when the run is refused outright', async () => {
    const r = await t.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['ok@example.net', 'refuse-me@example.net'] });
    expect(r.accepted).toEqual(['ok@example.net']);
    expect(r.refused).toEqual([{ rcpt: 'refuse-me@example.net', permanent: true, reason: expect.stringContaining('EX_NOUSER') }]);
    expect(r.refused[0].reason).toContain('550 no such user');
  });

  it('reports EX_TEMPFAIL as temporary for every recipient and does not split the run', async () => {
    const r = await t.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['tempfail@example.net', 'x@example.net'] });
    expect(r.accepted).toEqual([]);
    expect(r.refused.map((x) => x.permanent)).toEqual([false, false]);
    expect(runs()).toHaveLength(1);
  });

  it('kills a command that hangs after reading the message: ambiguous (it may have queued it), never a plain retry', async () => {
    const started = Date.now();
    const r = await t.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['hang@example.net'] });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.refused).toEqual([
      { rcpt: 'hang@example.net', permanent: false, ambiguous: true, reason: expect.stringContaining('timed out') },
    ]);
    expect(r.refused[0].reason).toContain('after reading the whole message');
  });

  it('kills a command that stalls before reading the message: a clear temporary failure', async () => {
    const r = await t.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['stall@example.net'] });
    expect(r.refused).toEqual([
      { rcpt: 'stall@example.net', permanent: false, reason: expect.stringContaining('before reading the whole message') },
    ]);
    expect(runs()).toHaveLength(0);
  });

  it('treats a missing command as temporary and check() says what to install', async () => {
    const missing = sendmailTransport({ path: '/nonexistent/sendmail', timeoutMs: 1000 });
    const r = await missing.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['b@example.net'] });
    expect(r.refused[0]).toMatchObject({ permanent: false, reason: expect.stringContaining('not found') });
    await expect(missing.check()).rejects.toThrow(/apt-get install postfix/);
    await expect(t.check()).resolves.toBeUndefined();
  });
});

describe('cloud mail API transport (a local server speaking the same contract)', () => {
  let server: Server;
  let url: string;
  const seen: Array<{ auth?: string; key?: string; body: { raw: string; envelopeFrom: string; envelopeTo: string[] } }> = [];
  type Mode = 'ok' | 'partial' | '503' | '400' | 'garbage' | 'silent';
  let mode: Mode = 'ok';
  beforeAll(async () => {
    server = createServer((req, res) => {
      let data = '';
      req.on('data', (c) => (data += c));
      req.on('end', () => {
        const body = JSON.parse(data);
        seen.push({ auth: req.headers.authorization, key: req.headers['idempotency-key'] as string | undefined, body });
        const send = (status: number, v: unknown) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(typeof v === 'string' ? v : JSON.stringify(v));
        if (mode === '503') return send(503, { error: 'busy' });
        if (mode === '400') return send(400, { error: 'bad sender' });
        if (mode === 'garbage') return send(200, 'not json');
        if (mode === 'silent') return send(200, { accepted: [body.envelopeTo[0]], refused: [] });
        if (mode === 'partial')
          return send(200, {
            accepted: [body.envelopeTo[0]],
            refused: [{ rcpt: body.envelopeTo[1], reason: 'mailbox unavailable', permanent: true }],
          });
        return send(200, { accepted: body.envelopeTo, refused: [] });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/send`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const cases: Array<[Mode, { accepted: number; permanent: boolean[] }]> = [
    ['ok', { accepted: 2, permanent: [] }],
    ['partial', { accepted: 1, permanent: [true] }],
    ['silent', { accepted: 1, permanent: [false] }],
    ['503', { accepted: 0, permanent: [false, false] }],
    ['400', { accepted: 0, permanent: [true, true] }],
    ['garbage', { accepted: 0, permanent: [false, false] }],
  ];
  it.each(cases)('answer %s → accepted and refused as the contract says', async (m, want) => {
    mode = m;
    const t = apiTransport({ url, token: 'tok', timeoutMs: 2000 });
    const r = await t.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['b@example.net', 'c@example.net'], id: 'send-1' });
    expect(r.accepted).toHaveLength(want.accepted);
    expect(r.refused.map((x) => x.permanent)).toEqual(want.permanent);
    const last = seen.at(-1)!;
    expect(last.auth).toBe('Bearer tok');
    expect(last.key).toBe('send-1');
    expect(Buffer.from(last.body.raw, 'base64').equals(raw)).toBe(true);
  });

  it('an unreachable API is temporary', async () => {
    const t = apiTransport({ url: 'http://127.0.0.1:1/send', token: 'tok', timeoutMs: 1000 });
    const r = await t.send({ raw, envelopeFrom: 'a@example.test', envelopeTo: ['b@example.net'] });
    expect(r.refused[0].permanent).toBe(false);
  });
});
