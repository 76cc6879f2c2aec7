import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config/index.js';
import { discoveryHash, findSvcRecord, parseSvcRecord } from '../../../lib/keys/index.js';

// Spec: Finding the server from an address (TXT format), Key-discovery hash, and the DoH resolver
// with DNSSEC (mail:dns:resolver doh-dnssec) against a local RFC 8484 server double.

describe('the _svc record', () => {
  it.each([
    ['v=SVCv1; id=abc12345; host=mail.example.org;', { id: 'abc12345', host: 'mail.example.org' }],
    ['v=SVCv1;id=abc12345;host=Mail.Example.org.', { id: 'abc12345', host: 'mail.example.org' }],
    // host= names a host: an IP literal or a port makes no record (the port is url_template's)
    ['v=SVCv1; id=abc12345; host=127.0.0.1:8443;', null],
    ['v=SVCv1; id=abc12345; host=mail.example.org:8443;', null],
    ['v=SVCv2; id=abc12345; host=mail.example.org;', null],
    ['v=SVCv1; host=mail.example.org;', null],
    ['v=SVCv1; id=abc; host=https://mail.example.org/;', null],
    ['v=spf1 -all', null],
  ])('%s', (txt, want) => expect(parseSvcRecord(txt)).toEqual(want));

  it('hashes the lowercased local part as z-base-32 SHA-256', () => {
    expect(discoveryHash('Alice')).toBe(discoveryHash('alice'));
    expect(discoveryHash('alice')).toMatch(/^[ybndrfg8ejkmcpqxot1uwisza345h769]{52}$/);
    expect(discoveryHash('alice')).not.toBe(discoveryHash('bob'));
  });
});

describe('DNS over HTTPS with DNSSEC', () => {
  let server: Server;
  let authentic = true;
  let sawDo = false;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const q = dnsPacket.decode(Buffer.concat(chunks));
        sawDo = (q.additionals ?? []).some((a) => a.type === 'OPT' && (((a as { flags?: number }).flags ?? 0) & dnsPacket.DNSSEC_OK) !== 0);
        const name = q.questions![0]!.name;
        const answers =
          name === '_svc.example.org'
            ? [{ type: 'TXT' as const, name, ttl: 60, class: 'IN' as const, data: ['v=SVCv1; id=doh00001; host=mail.example.org;'] }]
            : [];
        const out = dnsPacket.encode({
          type: 'response',
          id: q.id,
          flags:
            dnsPacket.RECURSION_DESIRED |
            dnsPacket.RECURSION_AVAILABLE |
            (authentic ? dnsPacket.AUTHENTIC_DATA : 0) |
            (answers.length ? 0 : 3),
          questions: q.questions,
          answers,
        });
        res.setHeader('content-type', 'application/dns-message');
        res.end(out);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(() => server?.close());

  const config = () =>
    loadConfig({
      env: { NODE_ENV: 'test' },
      values: {
        'mail:dns:resolver': 'doh-dnssec',
        'mail:dns:doh_url': `http://127.0.0.1:${(server.address() as AddressInfo).port}/dns-query`,
      },
    });

  it('reads the record from a validated answer and asks with the DO bit', async () => {
    authentic = true;
    expect(await findSvcRecord(config(), 'example.org')).toEqual({ id: 'doh00001', host: 'mail.example.org' });
    expect(sawDo).toBe(true);
    expect(await findSvcRecord(config(), 'nothing.example')).toBeNull();
  });

  it('refuses an answer without the AD bit', async () => {
    authentic = false;
    await expect(findSvcRecord(config(), 'example.org')).rejects.toThrow(/not DNSSEC-validated/);
  });
});
