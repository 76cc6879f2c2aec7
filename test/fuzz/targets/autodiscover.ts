// The Autodiscover request readers (Spec: Autodiscover plugin): the XML body of POST
// /autodiscover/autodiscover.xml (lib/plugins/autodiscover parseRequest: no DTD, a plain address,
// api-106 otherwise) and the query of the JSON form (jsonAnswer, which answers errors as bodies and
// must never throw). Input: one byte choosing the reader, then the XML body or the query string.
import { parse as parseQuery } from 'node:querystring';
import fc from 'fast-check';
import { jsonAnswer } from '../../../lib/plugins/autodiscover/json.js';
import { BODY_LIMIT, MOBILESYNC_RESPONSE, OUTLOOK_RESPONSE, parseRequest } from '../../../lib/plugins/autodiscover/request.js';
import type { PluginRequest } from '../../../lib/plugins/types.js';
import { address, text, word } from '../grammar.js';
import { check, clientError, type FuzzTarget } from '../target.js';

const REQUEST_NS = [
  'http://schemas.microsoft.com/exchange/autodiscover/mobilesync/requestschema/2006',
  'http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006',
  '',
];
const el = (name: string, inner: string, prefix: string) => `<${prefix}${name}>${inner}</${prefix}${name}>`;
const xml = fc
  .tuple(
    fc.constantFrom(
      '<?xml version="1.0" encoding="utf-8"?>',
      '',
      '\ufeff<?xml version="1.0"?>',
      '<!DOCTYPE a [<!ENTITY x "y">]>',
      '<!-- c -->',
    ),
    fc.constantFrom(...REQUEST_NS),
    fc.constantFrom('', 'a:', 'x:'),
    fc.oneof(
      address,
      fc.constantFrom(
        '<![CDATA[alice@example.org]]>',
        'alice&#64;example.org',
        'a&amp;b@example.org',
        '  alice@example.org\n',
        '"A" <a@b.example>',
      ),
      text(30),
    ),
    fc.oneof(
      fc.constantFrom(MOBILESYNC_RESPONSE, OUTLOOK_RESPONSE, `${OUTLOOK_RESPONSE}/`, OUTLOOK_RESPONSE.toUpperCase(), 'urn:other', ''),
      text(20),
    ),
    fc.boolean(),
    fc.constantFrom('Autodiscover', 'autodiscover', 'AUTODISCOVER'),
    fc.constantFrom('Request', 'request'),
    fc.nat(3),
  )
  .map(([decl, ns, p, email, schema, withSchema, root, req, repeat]) => {
    const inner =
      el('EMailAddress', email, p).repeat(1 + (repeat === 3 ? 1 : 0)) + (withSchema ? el('AcceptableResponseSchema', schema, p) : '');
    return `${decl}<${p}${root} xmlns${p ? `:${p.slice(0, -1)}` : ''}="${ns}">${el(req, inner, p)}</${p}${root}>`;
  });
const query = fc
  .array(
    fc.oneof(
      fc.tuple(
        fc.constantFrom('Protocol', 'protocol', 'PROTOCOL'),
        fc.oneof(fc.constantFrom('ActiveSync', 'activesync', 'AutodiscoverV1', ' ActiveSync ', 'Ews', 'Rest', ''), text(10)),
      ),
      fc.tuple(fc.constantFrom('Email', 'email'), fc.oneof(address, text(20))),
      fc.tuple(word, text(10)),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${k}=${encodeURIComponent(v.replace(/[\ud800-\udfff]/g, '?'))}`).join('&'));

const advertised = async () => [
  { name: 'ActiveSync', plugin: 'mobile-sync', endpoints: { url: '/Microsoft-Server-ActiveSync' } },
  { name: 'AutodiscoverV1', plugin: 'autodiscover', endpoints: { url: '/autodiscover/autodiscover.xml' } },
];

const target: FuzzTarget = {
  name: 'autodiscover',
  expected: clientError('api-106'),
  generate: fc.oneof(
    xml.map((x) => Buffer.concat([Buffer.from([0]), Buffer.from(x, 'utf8')])),
    fc.tuple(fc.option(address, { nil: undefined }), query).map(([path, q]) => Buffer.from(`\u0001${path ?? ''}\n${q}`, 'utf8')),
  ),
  dictionary: [
    '<Autodiscover>',
    '</Autodiscover>',
    '<Request>',
    '<EMailAddress>',
    '</EMailAddress>',
    '<![CDATA[',
    ']]>',
    '&lt;',
    '&#',
    '<!DOCTYPE',
    'xmlns:a="',
    '<a:',
    'Protocol=',
    '&Email=',
  ],
  maxLength: BODY_LIMIT,
  async fuzz(data) {
    if (!data.length) return;
    if (data[0] % 2 === 0) {
      const r = parseRequest(data.subarray(1));
      check(r.email.length > 0 && r.email === r.email.trim() && !/[\s<>,"]/.test(r.email), 'a plain address');
      return;
    }
    const body = data.subarray(1).toString('utf8');
    const nl = body.indexOf('\n');
    const pathEmail = nl > 0 ? body.slice(0, nl) : undefined;
    const req: PluginRequest = {
      method: 'GET',
      path: '/autodiscover/autodiscover.json',
      params: {},
      query: parseQuery(nl < 0 ? body : body.slice(nl + 1)),
      headers: {},
      body: undefined,
      ip: '127.0.0.1',
      requestId: 'fuzz',
      principal: null,
      signal: new AbortController().signal,
    };
    const res = await jsonAnswer({ req, pathEmail, base: 'https://mail.example.org', advertised });
    check([200, 400, 404].includes(res.status), `status ${res.status} is 200, 400 or 404`);
  },
};
export default target;
