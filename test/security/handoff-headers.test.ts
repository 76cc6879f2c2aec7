// docs/SECURITY.md, Internal hand-off, against the real api app and database: /internal/mta refuses
// every header an HTTP proxy uses to name the HTTP client or the proxy chain (403 api-119, nothing
// queued), while X-Envelope-* names (the hand-off's own envelope data) never collide with that
// list; and a control character in the envelope, after percent-decoding, is refused with 400
// api-106 naming the header or parameter on every /internal/mta route, before any recipient is
// resolved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, proxyHeaderIn, type IngestEntry } from '../../lib/ingest/index.js';
import { sqlBackends } from '../helpers/databases.js';
import { ingestFixture, INGEST_SECRET, message, type IngestFixture } from '../integration/ingest/setup.js';

const backends = await sqlBackends();

/** Headers proxies, load balancers and CDNs add to name the client, the chain or the original request. */
const PROXY_HEADER_NAMES = [
  'Forwarded',
  'Via',
  'X-Forwarded',
  'Forwarded-For',
  'X-Forwarded-For',
  'X-Forwarded-Host',
  'X-Forwarded-Proto',
  'X-Forwarded-Port',
  'X-Forwarded-Server',
  'X-Forwarded-Prefix',
  'X-Forwarded-Scheme',
  'X-Forwarded-Ssl',
  'X-Real-IP',
  'X-Client-IP',
  'Client-IP',
  'X-Originating-IP',
  'X-Remote-IP',
  'X-Remote-Addr',
  'True-Client-IP',
  'CF-Connecting-IP',
  'CF-Connecting-IPv6',
  'CF-Pseudo-IPv4',
  'Fastly-Client-IP',
  'X-Cluster-Client-IP',
  'X-ProxyUser-Ip',
  'X-Original-Forwarded-For',
  'WL-Proxy-Client-IP',
  'Proxy-Client-IP',
  'X-Azure-ClientIP',
  'X-Azure-SocketIP',
  'X-AppEngine-User-IP',
  'DO-Connecting-IP',
  'X-Envoy-External-Address',
  'X-BlueCoat-Via',
  'X-Host',
  'X-Original-Host',
];

/** Envelope names the hand-off may carry besides X-Envelope-From/To (the SMTP client's address and HELO, a queue id). */
const ENVELOPE_NAMES = [
  'X-Envelope-Client-Address',
  'X-Envelope-Client-Helo',
  'X-Envelope-Helo',
  'X-Envelope-Queue-Id',
  'X-Transaction-Id',
];

/** Control characters as an MTA could percent-encode them: C0, DEL, C1 (NEL in UTF-8). */
const CONTROLS = [
  ['%00', 'U+0000'],
  ['%01', 'U+0001'],
  ['%09', 'U+0009'],
  ['%0A', 'U+000A'],
  ['%1B', 'U+001B'],
  ['%7F', 'U+007F'],
  ['%C2%85', 'U+0085'],
] as const;

describe('the proxy header list', () => {
  it('names every proxy header, by exact name or X-Forwarded- prefix, and no X-Envelope-* name', () => {
    for (const h of PROXY_HEADER_NAMES) expect(proxyHeaderIn({ [h.toLowerCase()]: '1' }), h).toBe(h.toLowerCase());
    for (const h of ENVELOPE_NAMES) expect(proxyHeaderIn({ [h.toLowerCase()]: '1' }), h).toBeUndefined();
  });
});

describe.each(backends)('/internal/mta hand-off headers ($name)', (backend) => {
  let f: IngestFixture;
  const queued = () => f.api.deps.store.repo(IngestEntryModel).count();
  const lookup = (path: string) =>
    fetch(`${f.api.url}${path}`, { headers: { authorization: `Bearer ${INGEST_SECRET}` } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { code: string; message: string; details?: Array<{ path: string; message: string }> },
    }));
  /** POST /deliver with the envelope headers exactly as given (already percent-encoded). */
  const deliverRawHeaders = async (envelope: Record<string, string>) => {
    const res = await fetch(`${f.api.url}/internal/mta/deliver`, {
      method: 'POST',
      body: message(),
      headers: {
        authorization: `Bearer ${INGEST_SECRET}`,
        'content-type': 'message/rfc822',
        'x-envelope-from': 'sender%40remote.example',
        ...envelope,
      },
    });
    return {
      status: res.status,
      body: (await res.json()) as { code: string; message: string; details?: Array<{ path: string; message: string }> },
    };
  };
  beforeAll(async () => {
    // Wrong secrets are not part of this test: the throttle stays out of the way.
    f = await ingestFixture(backend, { 'mail:internal:max_failures': 1000 });
  });
  afterAll(async () => f?.close());

  it('every proxy header answers 403 api-119 naming it, on every route, with the right secret, and nothing is queued', async () => {
    const before = await queued();
    const refused: string[] = [];
    for (const h of PROXY_HEADER_NAMES) {
      const r = await f.deliver({ to: ['alice@example.test'], raw: message(), headers: { [h]: '203.0.113.9' } });
      if (r.status !== 403 || r.body.code !== 'api-119' || r.body.details?.[0]?.path !== h.toLowerCase())
        refused.push(`${h}: ${r.status} ${JSON.stringify(r.body)}`);
      for (const path of ['/internal/mta/domain?name=example.test', '/internal/mta/resolve?rcpt=alice%40example.test']) {
        const l = await fetch(`${f.api.url}${path}`, { headers: { authorization: `Bearer ${INGEST_SECRET}`, [h]: '203.0.113.9' } });
        await l.arrayBuffer();
        if (l.status !== 403) refused.push(`${h} ${path}: ${l.status}`);
      }
    }
    expect(refused).toEqual([]);
    expect(await queued()).toBe(before);
  });

  it('X-Envelope-* headers are not proxy headers: a hand-off carrying them is accepted', async () => {
    const headers = Object.fromEntries(
      ENVELOPE_NAMES.filter((h) => h !== 'X-Transaction-Id').map((h) => [h, h.endsWith('Address') ? '192.0.2.25' : 'mx.remote.example']),
    );
    const r = await f.deliver({ to: ['alice@example.test'], raw: message(), headers });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.results[0]).toMatchObject({ recipient: 'alice@example.test', status: 'queued' });
  });

  it('a control character in X-Envelope-To, after percent-decoding, is 400 api-106 naming the header; nothing is queued', async () => {
    const before = await queued();
    for (const [enc, code] of CONTROLS) {
      for (const to of [
        `alice${enc}%40example.test`,
        `alice%40example.test${enc}`,
        `${enc}alice%40example.test`,
        `bob%40example.test,alice${enc}%40example.test`,
      ]) {
        const r = await deliverRawHeaders({ 'x-envelope-to': to });
        expect(r.status, to).toBe(400);
        expect(r.body.code, to).toBe('api-106');
        expect(r.body.details, to).toEqual([{ path: 'X-Envelope-To', message: `control character ${code}` }]);
        expect(r.body.message, to).toMatch(/^X-Envelope-To: .*control character/);
      }
    }
    // A decoded CR LF in front is refused too, not trimmed away.
    expect((await deliverRawHeaders({ 'x-envelope-to': '%0D%0Aalice%40example.test' })).status).toBe(400);
    expect(await queued()).toBe(before);
  });

  it('a control character in X-Envelope-From is 400 api-106 naming X-Envelope-From', async () => {
    const before = await queued();
    for (const [enc, code] of CONTROLS) {
      const r = await deliverRawHeaders({ 'x-envelope-from': `sender${enc}%40remote.example`, 'x-envelope-to': 'alice%40example.test' });
      expect(r.status, enc).toBe(400);
      expect(r.body).toMatchObject({
        code: 'api-106',
        status: 400,
        details: [{ path: 'X-Envelope-From', message: `control character ${code}` }],
      });
    }
    expect(await queued()).toBe(before);
  });

  it('other malformed envelopes name their header too, never "(body)"', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'x-envelope-to': 'not-an-address' }, 'X-Envelope-To'],
      [{ 'x-envelope-to': 'alice%zz%40example.test' }, 'X-Envelope-To'],
      [{ 'x-envelope-to': 'alice%40example.test', 'x-envelope-from': 'a%20b%40remote.example' }, 'X-Envelope-From'],
      // The SMTP client as the MTA found it: a wrong value would silently weaken the spam scan.
      [{ 'x-envelope-to': 'alice%40example.test', 'x-envelope-client-address': '203.0.113.300' }, 'X-Envelope-Client-Address'],
      [{ 'x-envelope-to': 'alice%40example.test', 'x-envelope-client-address': 'mx.remote.example' }, 'X-Envelope-Client-Address'],
      [{ 'x-envelope-to': 'alice%40example.test', 'x-envelope-client-hostname': 'mx..remote.example' }, 'X-Envelope-Client-Hostname'],
      [{ 'x-envelope-to': 'alice%40example.test', 'x-envelope-client-hostname': 'mx remote example' }, 'X-Envelope-Client-Hostname'],
    ];
    for (const [headers, path] of cases) {
      const r = await deliverRawHeaders(headers);
      expect(r.status, JSON.stringify(headers)).toBe(400);
      expect(r.body.details?.[0]?.path, JSON.stringify(headers)).toBe(path);
    }
  });

  it("a HELO name is the remote client's text: one that is not printable ASCII is left out, never a refusal", async () => {
    const entryOf = async (tx: string) =>
      (await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).findOne({ transactionId: `mta:${tx}` }))!;
    let n = 0;
    for (const [helo, stored] of [
      ['mx.remote.example', 'mx.remote.example'],
      ['%5B192.0.2.1%5D', '[192.0.2.1]'],
      [encodeURIComponent('mx.exämple.test'), null],
      [encodeURIComponent('two words'), null],
      ['%0D%0AX-Injected%3A%201', null],
      ['%zz', null],
    ] as const) {
      const tx = `helo-${n++}-${Date.now()}`;
      const r = await deliverRawHeaders({
        'x-envelope-to': 'alice%40example.test',
        'x-envelope-client-helo': helo,
        'x-transaction-id': tx,
      });
      expect(r.status, helo).toBe(202);
      expect((await entryOf(tx)).clientHelo, helo).toBe(stored);
    }
  });

  it('the lookup routes refuse control characters in rcpt and name with 400 naming the parameter', async () => {
    for (const [enc, code] of CONTROLS) {
      const r = await lookup(`/internal/mta/resolve?rcpt=alice${enc}%40example.test`);
      expect(r.status, enc).toBe(400);
      expect(r.body).toMatchObject({ code: 'api-106', details: [{ path: 'rcpt', message: `control character ${code}` }] });
      const d = await lookup(`/internal/mta/domain?name=example.test${enc}`);
      expect(d.status, enc).toBe(400);
      expect(d.body).toMatchObject({ code: 'api-106', details: [{ path: 'name', message: `control character ${code}` }] });
    }
    // The clean forms are answered normally.
    expect((await lookup('/internal/mta/resolve?rcpt=alice%40example.test')).status).toBe(200);
    expect((await lookup('/internal/mta/domain?name=example.test')).status).toBe(200);
    expect((await lookup('/internal/mta/resolve?rcpt=not-an-address')).body.details).toEqual([
      { path: 'rcpt', message: 'must be a plain address' },
    ]);
  });
});
