// Reading Autodiscover requests: only a plain address, schemas as clients spell them, no DTD.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/errors/index.js';
import {
  BODY_LIMIT,
  MOBILESYNC_RESPONSE,
  OUTLOOK_RESPONSE,
  parseRequest,
  plainAddress,
  schemaOf,
} from '../../../lib/plugins/autodiscover/request.js';

const req = (inner: string) =>
  Buffer.from(
    `<?xml version="1.0" encoding="utf-8"?><Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/mobilesync/requestschema/2006"><Request>${inner}</Request></Autodiscover>`,
  );
const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return (e as ApiError).code;
  }
  throw new Error('not refused');
};

describe('plainAddress', () => {
  it.each([
    ['alice@example.test', 'alice@example.test'],
    ['  Alice.Smith+tag@Example.Test \n', 'Alice.Smith+tag@Example.Test'],
    ["o'brien@example.test", "o'brien@example.test"],
  ])('takes %j', (raw, want) => expect(plainAddress(raw)).toBe(want));

  it.each([
    'Alice <alice@example.test>',
    '"Alice" alice@example.test',
    'alice@example.test, bob@example.test',
    'alice@example.test;bob@example.test',
    'alice',
    '@example.test',
    'alice@',
    'alice@@example.test',
    'al ice@example.test',
    'alice@exa mple.test',
    '"quoted"@example.test',
    'alice(comment)@example.test',
    'alice@[127.0.0.1]',
    'alice@example.test\nbcc@example.test',
    '',
    `${'a'.repeat(250)}@example.test`,
  ])('refuses %j with api-106', (raw) => expect(refused(() => plainAddress(raw))).toBe('api-106'));

  it('refuses what is not text', () => {
    for (const v of [undefined, null, 42, { a: 1 }, ['a@b.example']]) expect(refused(() => plainAddress(v))).toBe('api-106');
  });
});

describe('schemaOf', () => {
  it.each([
    [undefined, 'mobilesync'],
    ['', 'mobilesync'],
    ['   ', 'mobilesync'],
    [MOBILESYNC_RESPONSE, 'mobilesync'],
    [OUTLOOK_RESPONSE, 'outlook'],
    [OUTLOOK_RESPONSE.toUpperCase(), 'outlook'],
    [` \n${OUTLOOK_RESPONSE}\t`, 'outlook'],
    [`${OUTLOOK_RESPONSE}/`, 'outlook'],
    [OUTLOOK_RESPONSE.replace('http:', 'https:'), 'outlook'],
    [MOBILESYNC_RESPONSE.replace('/mobilesync/', '/MobileSync/ '), 'mobilesync'],
    ['http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006', 'unknown'],
    ['urn:whatever', 'unknown'],
  ])('%j → %s', (raw, want) => expect(schemaOf(raw)).toBe(want));
});

describe('parseRequest', () => {
  it('reads the address and the schema', () => {
    expect(
      parseRequest(
        req(`<EMailAddress>alice@example.test</EMailAddress><AcceptableResponseSchema>${OUTLOOK_RESPONSE}</AcceptableResponseSchema>`),
      ),
    ).toEqual({ email: 'alice@example.test', schema: 'outlook' });
  });

  it('decodes the five predefined entities; an address spelled with character references is not plain', () => {
    expect(parseRequest(req('<EMailAddress>o&apos;brien@example.test</EMailAddress>')).email).toBe("o'brien@example.test");
    expect(refused(() => parseRequest(req('<EMailAddress>alice&#64;example.test</EMailAddress>')))).toBe('api-106');
  });

  it('takes a byte-order mark and CDATA', () => {
    expect(
      parseRequest(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), req('<EMailAddress><![CDATA[alice@example.test]]></EMailAddress>')]))
        .email,
    ).toBe('alice@example.test');
  });

  it.each([
    [
      'a DTD',
      '<?xml version="1.0"?><!DOCTYPE Autodiscover><Autodiscover><Request><EMailAddress>a@b.example</EMailAddress></Request></Autodiscover>',
    ],
    [
      'a billion laughs',
      `<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">${Array.from({ length: 9 }, (_, i) => `<!ENTITY ${String.fromCharCode(98 + i)} "${`&${String.fromCharCode(97 + i)};`.repeat(10)}">`).join('')}]><Autodiscover><Request><EMailAddress>&j;@b.example</EMailAddress></Request></Autodiscover>`,
    ],
    ['an undeclared entity', '<Autodiscover><Request><EMailAddress>&x;@b.example</EMailAddress></Request></Autodiscover>'],
    ['mismatched tags', '<Autodiscover><Request></Autodiscover>'],
    ['two roots', '<Autodiscover/><Autodiscover/>'],
    [
      'an element as the schema',
      `<Autodiscover><Request><EMailAddress>a@b.example</EMailAddress><AcceptableResponseSchema><x/></AcceptableResponseSchema></Request></Autodiscover>`,
    ],
    ['an element as the address', '<Autodiscover><Request><EMailAddress><b>a@b.example</b></EMailAddress></Request></Autodiscover>'],
    [
      'deep nesting',
      `<Autodiscover><Request>${'<x>'.repeat(40)}${'</x>'.repeat(40)}<EMailAddress>a@b.example</EMailAddress></Request></Autodiscover>`,
    ],
  ])('refuses %s with api-106', (_n, text) => expect(refused(() => parseRequest(Buffer.from(text)))).toBe('api-106'));

  it('the limit is the 16 KB of the spec', () => expect(BODY_LIMIT).toBe(16384));
});
