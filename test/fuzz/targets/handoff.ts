// The MTA hand-off (Spec: Internal mail hand-off): the envelope headers X-Envelope-From,
// X-Envelope-To and X-Transaction-Id as lib/ingest envelopeOf reads them (api-106 when malformed),
// then what ingest decides from the message before the one full parse: the light header reader,
// the sender verification from Authentication-Results, the transaction id and added headers.
// Input: from NUL to NUL transaction-id NUL raw message.
import fc from 'fast-check';
import { loadConfig } from '../../../lib/config/index.js';
import { transactionIdOf } from '../../../lib/ingest/accept.js';
import { bareAddress, domainOf, headerValue, headerValues, prependHeaders, readHeaders } from '../../../lib/ingest/headers.js';
import { envelopeOf } from '../../../lib/ingest/routes.js';
import { verifySender } from '../../../lib/ingest/verify.js';
import { address, text, word } from '../grammar.js';
import { check, clientError, type FuzzTarget } from '../target.js';

const config = loadConfig({ env: { NODE_ENV: 'test' }, values: { 'mail:security:trusted_authserv_id': 'mx.example.org' } });

const encoded = fc.oneof(
  { arbitrary: address.map((a) => encodeURIComponent(a.replace(/[\ud800-\udfff]/g, '?'))), weight: 4 },
  { arbitrary: address, weight: 1 },
  { arbitrary: fc.constantFrom('%', '%zz', '%E0%A4%A', '%00', '%2C', 'a%40b', '%C0%80@x', '', ' ', ',,'), weight: 1 },
);
const recipients = fc.array(encoded, { maxLength: 5 }).map((a) => a.join(','));
const authResults = fc
  .tuple(
    fc.constantFrom('mx.example.org', 'MX.EXAMPLE.ORG', 'evil.example', ''),
    fc.array(
      fc.oneof(
        fc
          .tuple(
            fc.constantFrom('dkim', 'dmarc', 'spf', 'DKIM'),
            fc.constantFrom('pass', 'fail', 'none', 'PASS'),
            fc.constantFrom(
              'header.d=example.org',
              'header.i=@sub.example.org',
              'header.from=example.org',
              'header.d=',
              '(comment; x)',
              '',
            ),
          )
          .map(([m, r, p]) => `${m}=${r} ${p}`),
        text(20),
      ),
      { maxLength: 4 },
    ),
  )
  .map(([id, parts]) => `Authentication-Results: ${[id, ...parts].join('; ')}`);
const message = fc
  .tuple(
    fc.array(
      fc.oneof(
        address.map((a) => `From: ${a}`),
        authResults,
        fc.tuple(fc.constantFrom('Subject', 'To', 'Received', 'X-Spam-Flag', 'List-Id'), text(30)).map(([k, v]) => `${k}: ${v}`),
        fc.tuple(word, text(20)).map(([k, v]) => ` ${k}: ${v}`), // a continuation line
      ),
      { maxLength: 8 },
    ),
    fc.constantFrom('\r\n', '\n'),
    text(100),
  )
  .map(([hs, nl, body]) => `${hs.join(nl)}${nl}${nl}${body}`);

/** What Node's HTTP parser lets through as a header value: no control characters, trimmed. */
const headerText = (b: Buffer) =>
  [...b.toString('latin1')]
    .filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f'))
    .join('')
    .trim();

const target: FuzzTarget = {
  name: 'handoff',
  expected: clientError('api-106'),
  generate: fc
    .tuple(
      fc.oneof(encoded, fc.constant('')),
      recipients,
      fc.oneof(word, fc.constantFrom('', 'A1B2C3', 'x'.repeat(201), 'q:1@h-2.x')),
      message,
    )
    .map(([f, t, tx, raw]) => Buffer.from(`${f}\0${t}\0${tx}\0${raw}`, 'utf8')),
  dictionary: [
    '%40',
    '%2C',
    ',',
    '@',
    '<',
    '>',
    '\0',
    '%00',
    '%0A',
    '%7F',
    '%C2%85',
    '\r\nAuthentication-Results: mx.example.org; dkim=pass header.d=',
    '\r\nFrom: ',
    '\r\n\r\n',
  ],
  async fuzz(data) {
    const parts: Buffer[] = [];
    let rest = data;
    for (let i = 0; i < 3; i++) {
      const nul = rest.indexOf(0);
      parts.push(nul < 0 ? rest : rest.subarray(0, nul));
      rest = nul < 0 ? Buffer.alloc(0) : rest.subarray(nul + 1);
    }
    const headers: Record<string, string> = {
      'x-envelope-from': headerText(parts[0]),
      'x-envelope-to': headerText(parts[1]),
      'x-transaction-id': headerText(parts[2]),
    };
    const env = envelopeOf((name) => headers[name] || undefined, 1000);
    check(
      env.recipients.length > 0 && env.recipients.every((r) => r === r.toLowerCase() && r.includes('@')),
      'recipients are lower-case addresses',
    );
    check(![env.from, ...env.recipients].some((a) => /\p{Cc}/u.test(a)), 'no control character survives percent-decoding (issue 25)');
    const raw = rest;
    const id = transactionIdOf({ raw, envelopeFrom: env.from, recipients: env.recipients, transactionId: env.transactionId });
    check(/^(mta|sha256):/.test(id), 'transaction id has its kind');
    const h = readHeaders(raw);
    check(
      h.fields.every(([k]) => k === k.toLowerCase() && !k.includes(':')),
      'header names are lower-case',
    );
    domainOf(bareAddress(headerValue(h, 'from')));
    headerValues(h, 'received');
    const sender = verifySender(config, h);
    check(!sender.verified || sender.fromAddress.length > 0, 'a verified sender has an address');
    const added = readHeaders(prependHeaders(raw, [['X-Svcmail-Test', '1']]));
    check(headerValue(added, 'x-svcmail-test').startsWith('1'), 'an added header reads back');
  },
};
export default target;
