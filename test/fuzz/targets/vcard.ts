// The vCard importer (lib/pim/vcard.ts vcfToContacts: contact import), and the export of what it
// read, read back. A card it cannot read is reported on its own (ok: false); only text that is not
// vCard at all is refused, with api-106.
import fc from 'fast-check';
import { contactsResource } from '../../../lib/pim/resources.js';
import { contactsToVcf, vcfToContacts, type ContactData } from '../../../lib/pim/vcard.js';
import { schemasOf } from '../../../lib/resources/index.js';
import { address, fold, text, word } from '../grammar.js';
import { check, clientError, type FuzzTarget } from '../target.js';

const oneLine = (t: string) => t.replace(/\r\n|\r|\n/g, '\\n');
const param = fc.constantFrom(
  '',
  ';TYPE=work',
  ';TYPE=HOME,PREF',
  ';type=cell;type=voice',
  ';PREF=1',
  ';CHARSET=UTF-8',
  ';ENCODING=QUOTED-PRINTABLE',
  ';ENCODING=b',
  ';VALUE=uri',
  ';LABEL="a;b"',
  ';X-ABLabel=_$!<Other>!$_',
);
const group = fc.constantFrom('', '', '', 'item1.', 'ITEM2.', 'x.');
const prop = fc.oneof(
  fc.tuple(group, param, text(30)).map(([g, p, v]) => `${g}FN${p}:${oneLine(v)}`),
  fc.array(text(10), { maxLength: 6 }).map((parts) => `N:${parts.map(oneLine).join(';')}`),
  fc.tuple(group, param, address).map(([g, p, a]) => `${g}EMAIL${p}:${oneLine(a)}`),
  fc
    .tuple(group, param, fc.constantFrom('+49 30 1234', 'tel:+1-555-0100', '', '(0)', 'x'.repeat(100)))
    .map(([g, p, t]) => `${g}TEL${p}:${t}`),
  fc.tuple(param, fc.array(text(10), { maxLength: 8 })).map(([p, parts]) => `ADR${p}:${parts.map(oneLine).join(';')}`),
  fc.array(text(10), { maxLength: 3 }).map((parts) => `ORG:${parts.map(oneLine).join(';')}`),
  fc
    .oneof(fc.constantFrom('1980-02-29', '19800229', '--0229', '1980', 'T1200', '20260101T000000Z', 'not a date', ''), text(10))
    .map((b) => `BDAY:${oneLine(b)}`),
  fc.array(fc.oneof(word, text(10)), { maxLength: 4 }).map((c) => `CATEGORIES:${c.map(oneLine).join(',')}`),
  fc
    .tuple(
      fc.constantFrom(
        'TITLE',
        'NOTE',
        'UID',
        'URL',
        'NICKNAME',
        'PHOTO;ENCODING=b;TYPE=JPEG',
        'X-SOCIALPROFILE',
        'REV',
        'KIND',
        'GENDER',
        'LANG',
      ),
      text(30),
    )
    .map(([k, v]) => `${k}:${oneLine(v)}`),
  fc.constantFrom(
    'NOTE;ENCODING=QUOTED-PRINTABLE:=C3=A9t=C3=A9',
    'PHOTO;VALUE=uri:data:image/png;base64,iVBORw0KGgo=',
    'BEGIN:VCARD',
    'END:VCARD',
    'AGENT:BEGIN:VCARD\\nFN:x\\nEND:VCARD',
  ),
);
const card = fc
  .tuple(fc.constantFrom('2.1', '3.0', '4.0', '5.0', ''), fc.array(prop, { maxLength: 10 }))
  .map(([v, ps]) => ['BEGIN:VCARD', ...(v ? [`VERSION:${v}`] : []), ...ps, 'END:VCARD'].join('\n'));
const file = fc
  .tuple(fc.array(card, { minLength: 1, maxLength: 4 }), fc.constantFrom('\r\n', '\n'), fc.constantFrom(0, 0, 75, 10))
  .map(([cards, nl, width]) =>
    Buffer.from(
      cards
        .join('\n')
        .split('\n')
        .map((l) => fold(l, width, nl))
        .join(nl),
      'utf8',
    ),
  );

const create = schemasOf(contactsResource).create;

const target: FuzzTarget = {
  name: 'vcard',
  expected: clientError('api-106'),
  generate: file,
  dictionary: [
    'BEGIN:VCARD\r\n',
    'END:VCARD\r\n',
    'VERSION:4.0\r\n',
    'FN:',
    'N:;;;;',
    'EMAIL;TYPE=work:',
    ';',
    ':',
    ',',
    '\\,',
    '\\n',
    '\r\n ',
    'item1.',
  ],
  maxLength: 32 * 1024,
  fuzz(data) {
    const cards = vcfToContacts(data.toString('utf8'));
    const ok = cards.flatMap((c) => (c.ok ? [c.contact] : []));
    for (const c of ok) {
      check(c.fn.length > 0, 'a contact has a name');
      check(c.birthday === null || typeof c.birthday === 'string', 'birthday is text or null');
    }
    // What the import route would store (the contact model refuses, say, a birthday that is no date)...
    const stored = ok.flatMap(({ vcardUid, ...rest }) => {
      const r = create.safeParse({ ...rest, ...(vcardUid ? { vcardUid } : {}), mailboxUid: 'mbx' });
      return r.success ? [r.data as unknown as ContactData] : [];
    });
    if (!stored.length) return;
    // ...exports, and the export reads back as the same number of contacts.
    const again = vcfToContacts(contactsToVcf(stored));
    check(
      again.length === stored.length && again.every((c) => c.ok),
      `export reads back (${JSON.stringify(again.find((c) => !c.ok) ?? null)})`,
    );
  },
};
export default target;
