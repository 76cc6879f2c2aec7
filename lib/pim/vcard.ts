import ICAL from 'ical.js';
import { invalid } from '../errors/index.js';

export interface ContactData {
  fn: string;
  givenName: string;
  middleName?: string;
  familyName: string;
  emails: Array<{ type: string; value: string }>;
  phones: Array<{ type: string; value: string }>;
  org: string;
  title: string;
  addresses: Array<{ type: string; value: string }>;
  birthday: string | null;
  note: string;
  categories: string[];
  vcardUid?: string | null;
}

export function contactsToVcf(contacts: ContactData[]): string {
  return (
    contacts
      .map((c) => {
        const v = new ICAL.Component('vcard');
        v.addPropertyWithValue('version', '4.0');
        if (c.vcardUid) v.addPropertyWithValue('uid', c.vcardUid);
        v.addPropertyWithValue('fn', c.fn);
        v.addPropertyWithValue('n', [c.familyName, c.givenName, c.middleName ?? '', '', '']);
        const typed = (name: string, list: Array<{ type: string; value: string }>) => {
          for (const x of list) v.addPropertyWithValue(name, x.value).setParameter('type', x.type);
        };
        typed('email', c.emails);
        typed('tel', c.phones);
        for (const a of c.addresses) v.addPropertyWithValue('adr', ['', '', a.value, '', '', '', '']).setParameter('type', a.type);
        if (c.org) v.addPropertyWithValue('org', c.org);
        if (c.title) v.addPropertyWithValue('title', c.title);
        if (c.birthday) v.addPropertyWithValue('bday', c.birthday);
        if (c.note) v.addPropertyWithValue('note', c.note);
        if (c.categories.length) v.addProperty(new ICAL.Property(['categories', {}, 'text', ...c.categories]));
        return v.toString();
      })
      .join('\r\n') + (contacts.length ? '\r\n' : '')
  );
}

const typeOf = (p: ICAL.Property) => {
  const t = p.getParameter('type');
  return (Array.isArray(t) ? t[0] : (t ?? 'other')).toString().toLowerCase().slice(0, 40);
};

/** Parses one or more vCards (3.0 or 4.0); each card becomes contact fields or an error of its own. */
export function vcfToContacts(text: string): Array<{ ok: true; contact: ContactData } | { ok: false; index: number; error: string }> {
  let parsed: unknown;
  try {
    parsed = ICAL.parse(text);
  } catch (e) {
    throw invalid(`not valid vCard: ${(e as Error).message}`);
  }
  const cards = (Array.isArray(parsed) && parsed[0] === 'vcard' ? [parsed] : (parsed as unknown[])) as unknown[];
  return cards.map((jcard, index) => {
    try {
      const v = new ICAL.Component(jcard as unknown[]);
      if (v.name !== 'vcard') throw new Error('not a VCARD');
      const n = v.getFirstPropertyValue('n') as unknown;
      const nParts = Array.isArray(n) ? n.map(String) : String(n ?? '').split(';');
      const fn = String(v.getFirstPropertyValue('fn') ?? '').trim() || [nParts[1], nParts[0]].filter(Boolean).join(' ');
      if (!fn) throw new Error('no FN or N');
      const bday = v.getFirstPropertyValue('bday');
      return {
        ok: true as const,
        contact: {
          fn,
          givenName: nParts[1] ?? '',
          middleName: nParts[2] ?? '',
          familyName: nParts[0] ?? '',
          emails: v.getAllProperties('email').map((p) => ({ type: typeOf(p), value: String(p.getFirstValue()).trim().toLowerCase() })),
          phones: v.getAllProperties('tel').map((p) => ({ type: typeOf(p), value: String(p.getFirstValue()).replace(/^tel:/i, '') })),
          addresses: v.getAllProperties('adr').map((p) => {
            const a = p.getFirstValue() as unknown;
            return { type: typeOf(p), value: (Array.isArray(a) ? a.flat().map(String) : [String(a)]).filter(Boolean).join(', ') };
          }),
          org: [v.getFirstPropertyValue('org')].flat().filter(Boolean).join(', '),
          title: String(v.getFirstPropertyValue('title') ?? ''),
          birthday: bday ? String(bday).slice(0, 10) : null,
          note: String(v.getFirstPropertyValue('note') ?? ''),
          categories: v.getAllProperties('categories').flatMap((p) => p.getValues().map(String)),
          vcardUid: (v.getFirstPropertyValue('uid') as string | null) ?? null,
        },
      };
    } catch (e) {
      return { ok: false as const, index, error: (e as Error).message };
    }
  });
}
