// POST /autodiscover/autodiscover.xml against the real protocols app (Spec: Autodiscover plugin):
// every answer validates with xmllint against the published response schemas; nothing is
// advertised before public_url is set or for a disabled plugin; limits and plain addresses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin, PluginStateModel } from '../../../lib/plugins/index.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';
import { request, seed, startStack, type Stack } from './_stack.js';
import { testEas, testMapi } from './_plugins.js';
import { adRequest, SCHEMA, validate } from './_xml.js';
import { exchangelibRead, exchangelibRequest } from './_exchangelib.js';

const backends = await sqlBackends();
const XMLLINT = requirePrograms('xmllint');
const EXCHANGELIB = requirePrograms('python3-exchangelib');
const PUBLIC = 'https://mail.example.test';

describe.each(backends.map((b) => [b.name, b] as const))('Autodiscover XML on %s', (_name, backend) => {
  let stack: Stack;
  let admin: string;
  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    request(`${stack.protocols}/autodiscover/autodiscover.xml`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'text/xml', ...headers },
    });
  beforeAll(async () => {
    stack = await startStack(backend, {
      values: { 'mail:autodiscover:public_url': `${PUBLIC}/` },
      plugins: [autodiscoverPlugin, testEas, testMapi],
    });
    ({ admin } = await seed(stack));
  }, 60_000);
  afterAll(async () => stack?.close());

  it.runIf(XMLLINT)('the schemas really validate: a wrong answer fails them', () => {
    const bad = `<?xml version="1.0"?><Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006"><Response xmlns="${SCHEMA.mobilesync}"><Bogus/></Response></Autodiscover>`;
    expect(validate(bad, 'mobilesync').ok).toBe(false);
    expect(validate(bad.replace(SCHEMA.mobilesync, SCHEMA.outlook), 'outlook').ok).toBe(false);
  });

  it('answers the mobile-sync schema by default, valid against AutodiscoverResponse.xsd + AutodiscoverMobileSync.xsd', async () => {
    for (const body of [
      adRequest('alice@example.test'),
      adRequest('alice@example.test').replace(/<AcceptableResponseSchema>.*<\/AcceptableResponseSchema>/, ''),
    ]) {
      const r = await post(body);
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/xml/);
      if (XMLLINT) expect(validate(r.text, 'mobilesync'), r.text).toMatchObject({ ok: true });
      expect(r.text).toContain(`<Response xmlns="${SCHEMA.mobilesync}">`);
      expect(r.text).toContain(`<Url>${PUBLIC}/Vendor-Server-ActiveSync</Url>`);
      // Spec: the display name is the caller's own address.
      expect(r.text).toContain('<DisplayName>alice@example.test</DisplayName>');
      expect(r.text).toContain('<EMailAddress>alice@example.test</EMailAddress>');
      expect(r.text).not.toMatch(/Redirect/);
    }
  });

  it('answers the Outlook schema with mapiHttp endpoints for a client that sends X-MapiHttpCapability', async () => {
    const r = await post(
      adRequest('alice@example.test', SCHEMA.outlook, 'http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006'),
      { 'x-mapihttpcapability': '1' },
    );
    expect(r.status).toBe(200);
    if (XMLLINT) expect(validate(r.text, 'outlook'), r.text).toMatchObject({ ok: true });
    expect(r.text).toContain(`<Response xmlns="${SCHEMA.outlook}">`);
    expect(r.text).toContain('<Protocol Type="mapiHttp" Version="1">');
    expect(r.text).toContain(`<InternalUrl>${PUBLIC}/mapi/emsmdb/?MailboxId=alice%40example.test</InternalUrl>`);
    expect(r.text).toContain(`<ExternalUrl>${PUBLIC}/mapi/nspi/?MailboxId=alice%40example.test</ExternalUrl>`);
    expect(r.text).toContain('<AutoDiscoverSMTPAddress>alice@example.test</AutoDiscoverSMTPAddress>');
  });

  it.runIf(EXCHANGELIB)(
    'python3-exchangelib (an independent Outlook client): its own request is answered and it reads the mapiHttp answer and the 601',
    async () => {
      const body = await exchangelibRequest('alice@example.test');
      const r = await post(body, { 'x-mapihttpcapability': '1' });
      expect(r.status).toBe(200);
      expect(await exchangelibRead(r.text)).toEqual({
        displayName: 'alice@example.test',
        smtp: 'alice@example.test',
        type: 'email',
        action: 'settings',
        protocols: [
          {
            version: '1',
            mailStore: {
              internal: `${PUBLIC}/mapi/emsmdb/?MailboxId=alice%40example.test`,
              external: `${PUBLIC}/mapi/emsmdb/?MailboxId=alice%40example.test`,
            },
            addressBook: {
              internal: `${PUBLIC}/mapi/nspi/?MailboxId=alice%40example.test`,
              external: `${PUBLIC}/mapi/nspi/?MailboxId=alice%40example.test`,
            },
          },
        ],
      });
      // Without X-MapiHttpCapability there is nothing for it: the error it understands.
      expect(await exchangelibRead((await post(body)).text)).toEqual({ error: { code: '601', message: 'Provider is not available' } });
    },
  );

  it.each([
    ['upper case and padding', `  ${SCHEMA.outlook.toUpperCase()}\n  `],
    ['https and a trailing slash', `${SCHEMA.outlook.replace('http:', 'https:')}/`],
    ['line breaks inside', SCHEMA.outlook.replace('/outlook/', '/outlook/\n   ')],
  ])('tolerates AcceptableResponseSchema as clients send it: %s', async (_n, schema) => {
    const r = await post(adRequest('alice@example.test', schema), { 'X-MapiHttpCapability': '1' });
    expect(r.text).toContain('Type="mapiHttp"');
  });

  it('element names in other cases and namespace prefixes are read too', async () => {
    const body =
      '<?xml version="1.0"?><a:autodiscover xmlns:a="http://schemas.microsoft.com/exchange/autodiscover/mobilesync/requestschema/2006"><a:REQUEST><a:EmailAddress> alice@example.test </a:EmailAddress></a:REQUEST></a:autodiscover>';
    const r = await post(body);
    expect(r.status, r.text).toBe(200);
    expect(r.text).toContain('<EMailAddress>alice@example.test</EMailAddress>');
  });

  it('the Outlook schema without X-MapiHttpCapability (or with 0), and any other schema: ErrorCode 601, valid', async () => {
    for (const [schema, headers] of [
      [SCHEMA.outlook, {}],
      [SCHEMA.outlook, { 'x-mapihttpcapability': '0' }],
      ['http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006', {}],
    ] as const) {
      const r = await post(adRequest('alice@example.test', schema), headers);
      expect(r.status).toBe(200);
      expect(r.text).toContain('<ErrorCode>601</ErrorCode>');
      expect(r.text).not.toContain('mapi/emsmdb');
      if (XMLLINT) {
        expect(validate(r.text, 'mobilesync').ok, r.text).toBe(true);
        expect(validate(r.text, 'outlook').ok).toBe(true);
      }
    }
  });

  it('an existing and a non-existing address get the same answer but for the echoed address', async () => {
    for (const [schema, headers] of [
      [SCHEMA.mobilesync, {}],
      [SCHEMA.outlook, { 'x-mapihttpcapability': '1' }],
    ] as const) {
      const known = await post(adRequest('alice@example.test', schema), headers);
      const unknown = await post(adRequest('nobody@example.test', schema), headers);
      const other = await post(adRequest('someone@elsewhere.example', schema), headers);
      expect(known.status).toBe(unknown.status);
      expect(unknown.text.replaceAll('nobody', 'alice')).toBe(known.text);
      expect(
        other.text
          .replaceAll('someone%40elsewhere.example', 'alice%40example.test')
          .replaceAll('someone@elsewhere.example', 'alice@example.test'),
      ).toBe(known.text);
    }
  });

  it.each([
    ['a display name', '"Alice" &lt;alice@example.test&gt;'],
    ['a list', 'alice@example.test, bob@example.test'],
    ['no domain', 'alice'],
    ['inner whitespace', 'alice @example.test'],
    ['a comment', 'alice(x)@example.test'],
    ['an IP literal', 'alice@[127.0.0.1]'],
    ['nothing', ''],
  ])('refuses %s with 400 api-106', async (_n, email) => {
    const r = await post(adRequest(email));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'api-106', status: 400 });
    expect(typeof r.json.message).toBe('string');
  });

  it('refuses a body of 16 KB + 1 byte with 413 api-110, and takes exactly 16 KB', async () => {
    const base = adRequest('alice@example.test');
    const pad = (n: number) => Buffer.from(base.replace('<Request>', `<!--${'x'.repeat(n - Buffer.byteLength(base) - 7)}--><Request>`));
    const exact = pad(16 * 1024);
    expect(exact.length).toBe(16384);
    expect((await post(exact)).status).toBe(200);
    const over = pad(16 * 1024 + 1);
    expect(over.length).toBe(16385);
    const r = await post(over);
    expect(r.status).toBe(413);
    expect(r.json).toMatchObject({ code: 'api-110', status: 413 });
  });

  it.each([
    ['not XML', 'hello'],
    ['unclosed', '<Autodiscover><Request><EMailAddress>a@b.example</EMailAddress>'],
    [
      'an entity bomb (DTD)',
      '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xxxxxxxx"><!ENTITY y "&x;&x;&x;&x;&x;">]><Autodiscover><Request><EMailAddress>&y;@b.example</EMailAddress></Request></Autodiscover>',
    ],
    [
      'an external entity',
      '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]><Autodiscover><Request><EMailAddress>&e;</EMailAddress></Request></Autodiscover>',
    ],
    ['no Request', '<Autodiscover><Other/></Autodiscover>'],
    [
      'two addresses',
      '<Autodiscover><Request><EMailAddress>a@b.example</EMailAddress><EMailAddress>c@b.example</EMailAddress></Request></Autodiscover>',
    ],
    ['an empty body', ''],
  ])('refuses %s with 400 api-106', async (_n, body) => {
    const r = await post(body);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'api-106', status: 400 });
    expect(r.text).not.toContain('root:');
  });

  it('is unauthenticated: credentials a client sends along change nothing', async () => {
    const plain = await post(adRequest('alice@example.test'));
    for (const authorization of ['Basic YWxpY2U6d3Jvbmc=', 'Bearer not-a-token', 'Negotiate abc']) {
      const r = await post(adRequest('alice@example.test'), { authorization });
      expect(r.status).toBe(200);
      expect(r.text).toBe(plain.text);
    }
  });

  it('a disabled plugin is no longer advertised, and a disabled autodiscover answers 404', async () => {
    const put = (name: string, enabled: boolean) => stack.call('PUT', `/api/system/plugins/${name}`, admin, { enabled });
    expect((await put('test-eas', false)).status).toBe(200);
    const r = await post(adRequest('alice@example.test'));
    expect(r.text).toContain('<ErrorCode>601</ErrorCode>');
    if (XMLLINT) expect(validate(r.text, 'mobilesync').ok).toBe(true);
    // MAPI is still advertised: only the disabled plugin's protocol went away.
    expect((await post(adRequest('alice@example.test', SCHEMA.outlook), { 'x-mapihttpcapability': '1' })).text).toContain('mapiHttp');
    expect((await put('autodiscover', false)).status).toBe(200);
    const gone = await post(adRequest('alice@example.test'));
    expect(gone.status).toBe(404);
    expect(gone.json).toMatchObject({ code: 'api-107', status: 404 });
    const stored = await stack.deps.store.repo<{ name: string; enabled: boolean }>(PluginStateModel).list({ limit: 10 });
    expect(stored.map((s) => [s.name, s.enabled]).sort()).toEqual([
      ['autodiscover', false],
      ['test-eas', false],
    ]);
    expect(await stack.deps.store.repo(AuditEntryModel).count({ action: 'plugins.disable' })).toBe(2);
    await put('autodiscover', true);
    await put('test-eas', true);
    expect((await post(adRequest('alice@example.test'))).text).toContain('Vendor-Server-ActiveSync');
  });
});

describe.each(backends.slice(0, 1).map((b) => [b.name, b] as const))('Autodiscover XML before public_url is set (%s)', (_name, backend) => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [autodiscoverPlugin, testEas, testMapi] });
  }, 60_000);
  afterAll(async () => stack?.close());

  it('advertises nothing: ErrorCode 601 for both schemas, valid', async () => {
    for (const [schema, headers] of [
      [SCHEMA.mobilesync, {}],
      [SCHEMA.outlook, { 'x-mapihttpcapability': '1' }],
    ] as const) {
      const r = await request(`${stack.protocols}/Autodiscover/Autodiscover.xml`, {
        method: 'POST',
        body: adRequest('alice@example.test', schema),
        headers,
      });
      expect(r.status).toBe(200);
      expect(r.text).toContain('<ErrorCode>601</ErrorCode>');
      expect(r.text).not.toMatch(/https?:\/\/(?!schemas\.microsoft\.com)/);
      if (XMLLINT) expect(validate(r.text, 'mobilesync').ok).toBe(true);
    }
  });
});
