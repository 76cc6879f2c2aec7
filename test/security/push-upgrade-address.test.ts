// docs/SECURITY.md, WebSocket (/push) floods: the pieces /push upgrades are limited with
// (lib/http/upgrade-limit.ts and RateLimits.count). The client address of an upgrade is decided
// exactly as Express decides req.ip (checked against a real Express server), X-Forwarded-For from
// an untrusted peer is ignored, addresses count under the anonymous limiter's key (IPv6 per /64),
// and the counters fail open.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/index.js';
import { createRateLimits } from '../../lib/http/index.js';
import {
  addressKey,
  answerHead,
  carriesCredentials,
  clientAddress,
  compileTrust,
  RefusalMemory,
  tooManyRequests,
  trustOfServer,
  upgradeRefusal,
} from '../../lib/http/index.js';

/** A request as seen outside Express: its peer's address and its headers. */
const seen = (peer: string | undefined, xff?: string, more: Record<string, string> = {}) =>
  ({
    socket: { remoteAddress: peer },
    headers: { ...(xff === undefined ? {} : { 'x-forwarded-for': xff }), ...more },
  }) as unknown as IncomingMessage;

describe('client address of an upgrade', () => {
  it('ignores X-Forwarded-For from a peer that is not trusted', () => {
    expect(clientAddress(seen('203.0.113.7', '198.51.100.1'), compileTrust([]))).toBe('203.0.113.7');
    expect(clientAddress(seen('203.0.113.7', '198.51.100.1'), compileTrust(['loopback']))).toBe('203.0.113.7');
    expect(clientAddress(seen('127.0.0.1', '198.51.100.1'), compileTrust([]))).toBe('127.0.0.1');
  });

  it('walks from the peer through trusted hops only: what a client wrote left of the first untrusted hop is never read', () => {
    const trust = compileTrust(['loopback', '10.0.0.0/8']);
    expect(clientAddress(seen('127.0.0.1', '198.51.100.1'), trust)).toBe('198.51.100.1');
    expect(clientAddress(seen('127.0.0.1', '6.6.6.6, 198.51.100.1'), trust)).toBe('198.51.100.1');
    expect(clientAddress(seen('127.0.0.1', '6.6.6.6, 198.51.100.1, 10.2.3.4'), trust)).toBe('198.51.100.1');
    expect(clientAddress(seen('::ffff:127.0.0.1', '198.51.100.1'), trust)).toBe('198.51.100.1');
    expect(clientAddress(seen('127.0.0.1', 'not-an-address, 198.51.100.1'), trust)).toBe('198.51.100.1');
    expect(clientAddress(seen('127.0.0.1'), trust)).toBe('127.0.0.1');
  });

  it('a unix socket peer is a trusted hop only when asked', () => {
    expect(clientAddress(seen(undefined, '198.51.100.1'), compileTrust([]), { unixPeerTrusted: true })).toBe('198.51.100.1');
    expect(clientAddress(seen(undefined, '198.51.100.1'), compileTrust([]))).toBe('');
  });

  it.each([[[]], [['loopback']], [['127.0.0.1']], [['10.0.0.0/8']], [['loopback', '198.51.100.0/24']]])(
    'matches req.ip of a real Express server trusting %j',
    async (list: string[]) => {
      const app = express();
      app.set('trust proxy', list.length ? list : false);
      app.get('/ip', (req, res) => void res.json({ express: req.ip, ours: clientAddress(req, compileTrust(list)) }));
      const server = createServer(app);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      try {
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        for (const xff of [
          undefined,
          '198.51.100.4',
          '6.6.6.6, 198.51.100.4',
          '198.51.100.4, 10.1.2.3',
          '2001:db8::1',
          ' , 198.51.100.9 ,',
          'garbage',
        ]) {
          const r = await fetch(`${base}/ip`, { headers: xff === undefined ? {} : { 'x-forwarded-for': xff } });
          const { express: fromExpress, ours } = (await r.json()) as { express: string; ours: string };
          expect(ours, `${JSON.stringify(list)} ${xff}`).toBe(fromExpress);
        }
      } finally {
        await new Promise<void>((r) => server.close(() => r()));
      }
    },
  );

  it("the api daemon's front door reads the trust rule of the Express app it serves; none: nobody is trusted", () => {
    const app = express();
    app.set('trust proxy', ['loopback']);
    const served = createServer(app);
    expect(clientAddress(seen('127.0.0.1', '198.51.100.1'), trustOfServer(served))).toBe('198.51.100.1');
    app.set('trust proxy', false);
    expect(clientAddress(seen('127.0.0.1', '198.51.100.1'), trustOfServer(served))).toBe('127.0.0.1');
    expect(clientAddress(seen('127.0.0.1', '198.51.100.1'), trustOfServer(createServer()))).toBe('127.0.0.1');
  });
});

describe('counting', () => {
  it('keys IPv6 addresses by their /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressKey('2001:db8:1:2::1')).toBe(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(addressKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(addressKey('192.0.2.1')).not.toBe(addressKey('192.0.2.2'));
  });

  it("RateLimits.count: anonymous per address (IPv6 per /64), signed-in per user, in the limiter's counters", async () => {
    const config = loadConfig({ env: { NODE_ENV: 'test' }, values: { 'rateLimit:max': 2, 'rateLimit:authenticated:max': 3 } });
    const limits = createRateLimits(config);
    try {
      expect(await limits.count({ ip: '2001:db8:5:5::1' })).toBe(0);
      expect(await limits.count({ ip: '2001:db8:5:5::2' })).toBe(0);
      const wait = await limits.count({ ip: '2001:db8:5:5:abcd::3' });
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(60);
      expect(await limits.count({ ip: '2001:db8:5:6::1' })).toBe(0);
      for (let i = 0; i < 3; i++) expect(await limits.count({ uid: 'alice' })).toBe(0);
      expect(await limits.count({ uid: 'alice' })).toBeGreaterThan(0);
      expect(await limits.count({ uid: 'bob' })).toBe(0);
    } finally {
      await limits.close();
    }
  });

  it('fails open while Redis does not answer', async () => {
    const config = loadConfig({
      env: { NODE_ENV: 'test' },
      values: { 'rateLimit:max': 1, 'redis:url': 'redis://127.0.0.1:1', 'redis:command_timeout_ms': 200 },
    });
    const limits = createRateLimits(config);
    try {
      const t0 = Date.now();
      for (let i = 0; i < 3; i++) expect(await limits.count({ ip: '198.51.100.1' })).toBe(0);
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      await limits.close();
    }
  });
});

describe('refusals', () => {
  it('are plain HTTP answers with the catalogue body and Retry-After, which the front door can read back', () => {
    const text = upgradeRefusal(tooManyRequests(17));
    expect(text).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\n/);
    expect(JSON.parse(text.split('\r\n\r\n')[1])).toEqual({ code: 'api-109', status: 429, message: 'Too many requests; retry in 17 s' });
    expect(answerHead(Buffer.from(text))).toEqual({ status: 429, retryAfter: 17 });
    expect(answerHead(Buffer.from('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n'))).toEqual({
      status: 101,
      retryAfter: null,
    });
    expect(answerHead(Buffer.from('garbage'))).toBeNull();
  });

  it('the front door keeps verdicts until their Retry-After, bounded in number', () => {
    let now = 1_000_000;
    const memory = new RefusalMemory(2, 3600, () => now);
    memory.remember('a', 5);
    expect(memory.secondsLeft('a')).toBe(5);
    now += 4_500;
    expect(memory.secondsLeft('a')).toBe(1);
    now += 600;
    expect(memory.secondsLeft('a')).toBe(0);
    memory.remember('b', 10);
    memory.remember('c', 10);
    memory.remember('d', 99_999);
    expect(memory.secondsLeft('b')).toBe(0); // the oldest went first
    expect(memory.secondsLeft('d')).toBe(3600);
  });

  it('tells upgrades that carry a token from those that do not', () => {
    expect(carriesCredentials(seen('127.0.0.1', undefined, { authorization: 'Bearer x' }))).toBe(true);
    expect(carriesCredentials(seen('127.0.0.1', undefined, { cookie: 'a=1; jwt=x' }))).toBe(true);
    expect(carriesCredentials(seen('127.0.0.1', undefined, { cookie: 'notjwt=x' }))).toBe(false);
    expect(carriesCredentials(seen('127.0.0.1'))).toBe(false);
  });
});
