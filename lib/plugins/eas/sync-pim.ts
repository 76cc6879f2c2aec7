import escapeHtml from 'escape-html';
import { ApiError, type RecordsApi, type Row } from '../api.js';
import { BODY, cut, type BodyPreference } from './mail-item.js';
import { kid, kids, textOf } from './protocol.js';
import type { ItemContext, Source } from './sync-source.js';
import { ns, type PageName, type WbxmlElement } from './wbxml/index.js';

// Contacts, calendar events and tasks as Sync collections, through the host's records API (the
// resource engine: validation, access checks with trusted roles stripped, events). The change key
// is the record version. A device's Change of a record changed on the server since the device got
// it keeps the server's version (the next round sends it back) unless the device asked for
// Conflict 0 (the client's object wins).

const asb = ns('AirSyncBase');

/**
 * The AirSyncBase Body of a record's text (stored as plain text), in the device's first textual
 * preference: plain (Type 1), or HTML (Type 2: the text escaped, line breaks kept) for a device
 * that asks for HTML first; cut at that preference's TruncationSize.
 */
export function textBody(text: string, prefs: BodyPreference[]): WbxmlElement {
  const pref = prefs.find((p) => p.type === BODY.text || p.type === BODY.html);
  const type = pref?.type === BODY.html ? BODY.html : BODY.text;
  const content = type === BODY.html && text ? `<div>${escapeHtml(text).replace(/\r?\n/g, '<br>')}</div>` : text;
  const limit = pref?.truncationSize ?? null;
  const size = Buffer.byteLength(content, 'utf8');
  if (limit !== null && pref?.allOrNone && size > limit)
    return asb('Body', [asb('Type', type), asb('EstimatedDataSize', size), asb('Truncated', '1')]);
  const { data, truncated } = cut(content, limit);
  return asb('Body', [asb('Type', type), asb('EstimatedDataSize', size), ...(truncated ? [asb('Truncated', '1')] : []), asb('Data', data)]);
}

/** The text of a device's Body (HTML reduced to text); undefined when absent or cut (the server's text stays). */
export function bodyText(data: WbxmlElement | undefined): string | undefined {
  const body = kid(data, 'Body');
  if (!body || textOf(body, 'Truncated') === '1') return undefined;
  const text = textOf(body, 'Data') ?? '';
  if (textOf(body, 'Type') !== String(BODY.html)) return text;
  return text
    .replace(/<br\s*\/?>|<\/p>|<\/div>/gi, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .trim();
}

/** MS-ASDTYPE compact date-time: 20261127T100000Z. */
export const compact = (d: unknown) =>
  new Date(d as Date)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/** A date a device sent, compact or ISO 8601; undefined when it is not one. */
export function parseDate(s: string | undefined): Date | undefined {
  if (!s) return undefined;
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s.trim());
  const d = m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : new Date(s.trim());
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** Categories of a class's page, absent when there are none. */
export const categoriesOut = (page: PageName, list: unknown): WbxmlElement[] => {
  const p = ns(page);
  const cats = Array.isArray(list) ? list.map(String) : [];
  return cats.length
    ? [
        p(
          'Categories',
          cats.map((c) => p('Category', c)),
        ),
      ]
    : [];
};
export const categoriesIn = (data: WbxmlElement | undefined): string[] =>
  kids(kid(data, 'Categories'), 'Category')
    .map((c) => (c.text ?? '').trim())
    .filter(Boolean);

export interface RecordSourceSpec {
  id: string;
  className: 'Contacts' | 'Calendar' | 'Tasks';
  records: RecordsApi;
  /** The records of the collection (equality filter) — every record of it carries these values; placement may fill it in. */
  filter: Record<string, string>;
  push: Source['push'];
  /** The device's window (FilterType); absent: every record. */
  inWindow?(row: Row, filterType: number): boolean;
  /** The collection's items made of its records (a calendar's series carry their modified occurrences); absent: one each. */
  arrange?(rows: Row[]): Row[];
  /** An item's change key; absent: the record's version. */
  keyOf?(row: Row): string;
  /**
   * What else a device's Add or Change writes once the record is (a calendar's modified
   * occurrences): `before` is the item as arranged before the write; true when something was written.
   */
  afterWrite?(written: Row, data: WbxmlElement | undefined, before: Row | undefined): Promise<boolean>;
  toData(row: Row, x: ItemContext): WbxmlElement[];
  /** The record fields a device's ApplicationData sets (`current` null for an Add). */
  fromData(data: WbxmlElement | undefined, x: ItemContext, current: Row | null): Record<string, unknown>;
  /** The fields that place a new record in the collection (made when needed: a default task list). */
  placement(): Promise<Record<string, unknown>>;
  /** A device deleting one occurrence (airsyncbase:InstanceId): the fields that exclude it. */
  dropInstance?(row: Row, instance: Date): Record<string, unknown>;
}

const gone = () => new ApiError('api-107', 'No such item in this collection');

/** A collection of personal-information records. */
export function recordSource(spec: RecordSourceSpec): Source {
  const { records, filter } = spec;
  // A filter naming nothing (a task list not made yet) is an empty collection.
  const none = () => Object.values(filter).some((v) => !v);
  const belongs = (row: Row) => Object.entries(filter).every(([k, v]) => String(row[k]) === v);
  const items = async () => (spec.arrange ? spec.arrange(await records.list(filter)) : records.list(filter));
  const keyOf = (row: Row) => (spec.keyOf ? spec.keyOf(row) : String(row.version));
  // A change key is the record's version, then what else it names (keyOf): the device's change is
  // checked against the version and the rest is kept for what it names did not change.
  const versionOf = (key: string) => key.split('+')[0];
  const restOf = (key: string | undefined) => (key?.includes('+') ? key.slice(key.indexOf('+')) : '');
  /** An item's change key as keys() answers it now. */
  const keyNow = async (row: Row) => keyOf((await items()).find((r) => r.uid === row.uid) ?? row);
  const current = async (id: string) => {
    const row = await records.get(id);
    if (!belongs(row)) throw gone();
    return row;
  };
  return {
    id: spec.id,
    className: spec.className,
    push: spec.push,
    keyOf,
    async keys(filterType) {
      if (none()) return new Map<string, string>();
      if (!spec.inWindow && !spec.arrange) return records.keys(filter);
      const out = new Map<string, string>();
      for (const row of await items()) if (!spec.inWindow || spec.inWindow(row, filterType)) out.set(String(row.uid), keyOf(row));
      return out;
    },
    async rows(uids) {
      const out = new Map<string, Row>();
      if (none()) return out;
      if (uids.length > 20 || spec.arrange) {
        const wanted = new Set(uids);
        for (const row of await items()) if (wanted.has(String(row.uid))) out.set(String(row.uid), row);
        return out;
      }
      for (const id of uids) {
        const row = await records.get(id).catch(() => null);
        if (row && belongs(row)) out.set(id, row);
      }
      return out;
    },
    toData: (row, x) => Promise.resolve(spec.toData(row, x)),
    changeData: (row, x) => Promise.resolve(spec.toData(row, x)),
    async add(data, x) {
      const row = await records.create({ ...spec.fromData(data, x, null), ...(await spec.placement()) });
      if (spec.afterWrite && (await spec.afterWrite(row, data, undefined))) return { uid: String(row.uid), version: await keyNow(row) };
      return { uid: String(row.uid), version: String(row.version) };
    },
    async change(id, data, held, policy, x) {
      // Written only over the version it was merged with: a server change in between is a conflict
      // (server wins), or, when the device wins, merged with again.
      for (;;) {
        const row = await current(id);
        if (policy === 'server' && held !== undefined && versionOf(held) !== String(row.version)) return 'conflict';
        try {
          const before = spec.afterWrite && spec.arrange ? (await items()).find((r) => String(r.uid) === id) : undefined;
          const written = await records.update(id, spec.fromData(data, x, row), Number(row.version));
          if (spec.afterWrite && (await spec.afterWrite(written, data, before))) return keyNow(written);
          return String(written.version) + restOf(held);
        } catch (e) {
          if ((e as { code?: string }).code !== 'api-108') throw e;
          if (policy === 'server') return 'conflict';
        }
      }
    },
    async remove(id, { instanceId }) {
      const row = await current(id);
      const instance = parseDate(instanceId);
      if (instance && spec.dropInstance) return String((await records.update(id, spec.dropInstance(row, instance))).version);
      await records.remove(id);
      return null;
    },
  };
}
