import type { Row } from '../api.js';
import { kid, textOf } from './protocol.js';
import { bodyText, categoriesIn, categoriesOut, parseDate, textBody } from './sync-pim.js';
import type { ItemContext } from './sync-source.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// A contact as a device holds it (MS-ASCNTC) and back. The server keeps typed lists (emails,
// phones, addresses) a device shows as fixed slots: Email1–3Address are the first three addresses;
// phones of type cell/mobile, work and home fill MobilePhoneNumber, Business(2)PhoneNumber and
// Home(2)PhoneNumber; an address (one line on the server) is the Street of the home, business or
// other address. A device's change replaces what the slots show and keeps what they cannot (a
// fourth address, a fax number, a birthday without a year); the note is the Body (plain text).

const co = ns('Contacts');

interface Typed {
  type: string;
  value: string;
}
const list = (v: unknown): Typed[] => (Array.isArray(v) ? (v as Typed[]) : []);

const MOBILE = ['cell', 'mobile'];
const PHONE_SLOTS: Array<[tag: string, types: string[], nth: number, stored: string]> = [
  ['MobilePhoneNumber', MOBILE, 0, 'cell'],
  ['BusinessPhoneNumber', ['work'], 0, 'work'],
  ['Business2PhoneNumber', ['work'], 1, 'work'],
  ['HomePhoneNumber', ['home'], 0, 'home'],
  ['Home2PhoneNumber', ['home'], 1, 'home'],
];
const SLOT_TYPES = new Set([...MOBILE, 'work', 'home']);
const ADDRESS_SLOTS: Array<[prefix: string, type: string]> = [
  ['Home', 'home'],
  ['Business', 'work'],
  ['Other', 'other'],
];
const isOtherAddress = (a: Typed) => a.type !== 'home' && a.type !== 'work';

/** The ApplicationData of a contact. */
export function contactData(row: Row, x: ItemContext): WbxmlElement[] {
  const fn = String(row.fn ?? '');
  const display = fn.replace(/["<>]/g, '').trim();
  const phones = list(row.phones);
  const addresses = list(row.addresses);
  const text = (tag: string, v: unknown) => (typeof v === 'string' && v ? [co(tag, v)] : []);
  const out: WbxmlElement[] = [textBody(String(row.note ?? ''), x.prefs), co('FileAs', fn)];
  out.push(...text('FirstName', row.givenName), ...text('MiddleName', row.middleName), ...text('LastName', row.familyName));
  list(row.emails)
    .slice(0, 3)
    .forEach((e, i) => out.push(co(`Email${i + 1}Address`, display ? `"${display}" <${e.value}>` : e.value)));
  for (const [tag, types, nth] of PHONE_SLOTS) out.push(...text(tag, phones.filter((p) => types.includes(p.type))[nth]?.value));
  out.push(...text('CompanyName', row.org), ...text('JobTitle', row.title));
  if (typeof row.birthday === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(row.birthday))
    out.push(co('Birthday', `${row.birthday}T00:00:00.000Z`));
  for (const [prefix, type] of ADDRESS_SLOTS) {
    const a = addresses.find((v) => (type === 'other' ? isOtherAddress(v) : v.type === type));
    out.push(...text(`${prefix}AddressStreet`, a?.value));
  }
  out.push(...categoriesOut('Contacts', row.categories));
  return out;
}

/** `"Name" <addr>` or a bare address → the address (undefined when it is not one). */
function addressOf(s: string | undefined): string | undefined {
  if (!s) return undefined;
  const m = /<([^<>]+)>/.exec(s);
  const a = (m ? m[1] : s).trim().toLowerCase();
  return /^[^\s@"<>]+@[^\s@"<>]+\.[^\s@"<>]+$/.test(a) ? a : undefined;
}

/** A birthday a device sent (midnight in its own zone, written in UTC) → YYYY-MM-DD: the nearest day. */
function birthdayOf(s: string | undefined): string | undefined {
  const d = parseDate(s);
  return d ? new Date(d.getTime() + 12 * 3_600_000).toISOString().slice(0, 10) : undefined;
}

function addressesIn(data: WbxmlElement | undefined, current: Typed[]): Typed[] {
  const out: Typed[] = [];
  for (const [prefix, type] of ADDRESS_SLOTS) {
    const parts = ['Street', 'City', 'State', 'PostalCode', 'Country']
      .map((p) => (textOf(data, `${prefix}Address${p}`) ?? '').trim())
      .filter(Boolean);
    if (parts.length) out.push({ type, value: parts.join(', ').slice(0, 320) });
  }
  const firstOther = current.findIndex(isOtherAddress);
  return [...out, ...current.filter((a, i) => a.type !== 'home' && a.type !== 'work' && i !== firstOther)];
}

/** The contact fields a device's Add or Change sets (see the header for what is kept). */
export function contactFields(data: WbxmlElement | undefined, _x: ItemContext, current: Row | null): Record<string, unknown> {
  const t = (tag: string) => (textOf(data, tag) ?? '').trim();
  const emails = [1, 2, 3].map((n) => addressOf(textOf(data, `Email${n}Address`))).filter((e): e is string => !!e);
  const curEmails = list(current?.emails);
  const curPhones = list(current?.phones);
  const phones = [
    ...PHONE_SLOTS.flatMap(([tag, , , stored]) => (t(tag) ? [{ type: stored, value: t(tag).slice(0, 320) }] : [])),
    ...curPhones.filter((p) => !SLOT_TYPES.has(p.type)),
  ];
  const named = [t('FirstName'), t('MiddleName'), t('LastName')].filter(Boolean).join(' ');
  const fn = (named || t('FileAs') || t('CompanyName') || emails[0] || String(current?.fn ?? '') || 'Unnamed').slice(0, 300);
  const birthday = birthdayOf(textOf(data, 'Birthday'));
  const keptBirthday = typeof current?.birthday === 'string' && current.birthday.startsWith('--') ? current.birthday : null;
  const note = bodyText(data);
  return {
    fn,
    givenName: t('FirstName'),
    middleName: t('MiddleName'),
    familyName: t('LastName'),
    emails: [...emails.map((value, i) => ({ type: curEmails[i]?.type ?? 'other', value })), ...curEmails.slice(3)],
    phones,
    org: t('CompanyName'),
    title: t('JobTitle'),
    addresses: addressesIn(data, list(current?.addresses)),
    birthday: birthday ?? keptBirthday,
    categories: kid(data, 'Categories') ? categoriesIn(data) : [],
    ...(note !== undefined ? { note } : current ? {} : { note: '' }),
  };
}
