// Building blocks of the targets' grammars: the awkward text real senders and clients produce.
import fc from 'fast-check';

/** Text as found in headers and bodies: plain, 8-bit, unicode, control characters. */
export const text = (maxLength = 40): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: fc.string({ maxLength }), weight: 4 },
    { arbitrary: fc.string({ unit: 'grapheme', maxLength }), weight: 2 },
    { arbitrary: fc.string({ unit: 'binary', maxLength }), weight: 1 },
    {
      arbitrary: fc.constantFrom(
        '',
        ' ',
        '\t',
        '"',
        '\\',
        '=?',
        '?=',
        ';',
        ':',
        ',',
        '<>',
        '()',
        '\u0000',
        '\u00a0',
        'İ',
        'ß',
        '\ufeff',
        '\u202e',
        '\ud800',
      ),
      weight: 1,
    },
  );

export const word = fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/);

export const domain = fc.oneof(
  fc.constantFrom(
    'example.org',
    'example.test',
    'bench.test',
    'localhost',
    'xn--bcher-kva.example',
    '[127.0.0.1]',
    'sub.example.org.',
    'a',
  ),
  fc.array(word, { minLength: 1, maxLength: 4 }).map((p) => p.join('.')),
);

/** An address: plain, quoted, with a display name, a group, a route, or broken. */
export const address = fc.oneof(
  { arbitrary: fc.tuple(word, domain).map(([l, d]) => `${l}@${d}`), weight: 4 },
  { arbitrary: fc.tuple(text(20), word, domain).map(([n, l, d]) => `"${n}" <${l}@${d}>`), weight: 2 },
  { arbitrary: fc.tuple(word, domain).map(([l, d]) => `"${l} x"@${d}`), weight: 1 },
  { arbitrary: fc.tuple(word, word, domain).map(([g, l, d]) => `${g}: ${l}@${d}, <${l}@${d}>;`), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      '<>',
      '@',
      'a@',
      '@b',
      'a@@b',
      '<a@b',
      'a@b>',
      'undisclosed-recipients:;',
      '<@route:a@b>',
      'a@b (comment)',
      'a@b, c@d',
      '"a@b"',
    ),
    weight: 1,
  },
);

/** An RFC 2047 encoded word, well or badly formed. */
export const encodedWord = fc
  .tuple(
    fc.constantFrom('utf-8', 'UTF-8', 'iso-8859-1', 'windows-1252', 'koi8-r', 'gb2312', 'iso-2022-jp', 'x-unknown', 'utf-7', ''),
    fc.constantFrom('B', 'Q', 'b', 'q', 'X'),
    text(30),
  )
  .map(([cs, enc, t]) => `=?${cs}?${enc}?${enc.toUpperCase() === 'B' ? Buffer.from(t).toString('base64') : t.replace(/ /g, '_')}?=`);

export const dateText = fc.oneof(
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toUTCString()),
  fc.constantFrom(
    'Sun, 22 Nov 2026 10:00:00 +0000',
    'Mon, 31 Feb 2002 25:61:61 +9999',
    '0',
    'yesterday',
    '1 Jan 70',
    'Tue, 1 Jan 100000 00:00:00 GMT',
    '',
  ),
);

export const eol = fc.constantFrom('\r\n', '\n', '\r');

/** Long lines and folded lines, as both RFC 5322 and RFC 5545 fold them. */
export function fold(line: string, at: number, nl: string): string {
  if (at <= 0 || line.length <= at) return line;
  const parts: string[] = [];
  for (let i = 0; i < line.length; i += at) parts.push(line.slice(i, i + at));
  return parts.join(`${nl} `);
}

export const bytes = (maxLength = 256) => fc.uint8Array({ maxLength }).map((u) => Buffer.from(u));

export const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double().map(String),
  fc.constantFrom(
    '0',
    '-0',
    '1e400',
    '-1e400',
    '99999999999999999999',
    '2147483648',
    '9007199254740993',
    '0x10',
    ' 1',
    '1 ',
    '',
    'NaN',
    'Infinity',
    '01',
    '1.0',
    '+1',
    '٣',
  ),
);
