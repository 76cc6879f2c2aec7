import { isApiError, type PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { bodyPreferences, mailData, mimeSupportOf } from './mail-item.js';
import { kid, textOf, wbxml } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// Search (MS-ASCMD 2.2.1.16): the global address list (mailboxes and lists of the directory) and
// the caller's mailbox (words, optionally one folder and a date bound), one Range of results at a
// time with the Total. Document libraries are not searched (Status 4 for that store).

const se = ns('Search');
const ga = ns('GAL');
const as = ns('AirSync');

/** Search Status values (MS-ASCMD 2.2.3.177.13). */
const STATUS = { ok: 1, invalid: 2, server: 3, badStore: 4, denied: 5, notFound: 6, tooComplex: 8 } as const;
const MAX_RANGE = 100;

/** Options Range "a-b" (inclusive), capped at MAX_RANGE results; null when malformed. */
function rangeOf(options: WbxmlElement | undefined): { from: number; to: number } | null {
  const r = textOf(options, 'Range') ?? '0-9';
  const m = /^(\d{1,6})-(\d{1,6})$/.exec(r);
  if (!m || Number(m[2]) < Number(m[1])) return null;
  const from = Number(m[1]);
  return { from, to: Math.min(Number(m[2]), from + MAX_RANGE - 1) };
}

const store = (status: number, results: WbxmlElement[] = [], range?: { from: number; to: number }, total?: number) =>
  se('Store', [
    se('Status', status),
    ...results,
    ...(range && results.length ? [se('Range', `${range.from}-${range.from + results.length - 1}`)] : []),
    ...(total !== undefined ? [se('Total', total)] : []),
  ]);

async function gal(r: EasRequest, query: string, range: { from: number; to: number }): Promise<WbxmlElement> {
  if (query.trim().length < 1) return store(STATUS.invalid);
  const all = await r.caller.directory(query.trim(), range.to + 1);
  const page = all.slice(range.from, range.to + 1);
  const results = page.map((e) =>
    se('Result', [
      se('Properties', [ga('DisplayName', e.name || e.address), ga('EmailAddress', e.address), ga('Alias', e.address.split('@')[0])]),
    ]),
  );
  return store(STATUS.ok, results, range, all.length);
}

/** The words, folder and dates of a Mailbox query (And of Class, CollectionId, FreeText, GreaterThan/LessThan DateReceived). */
function mailQuery(query: WbxmlElement | undefined): { q?: string; folderUid?: string; after?: Date; before?: Date } | null {
  const and = kid(query, 'And') ?? query;
  if (!and) return null;
  const out: { q?: string; folderUid?: string; after?: Date; before?: Date } = {};
  const words = textOf(and, 'FreeText');
  if (words) out.q = words.slice(0, 500);
  const folder = textOf(and, 'CollectionId');
  if (folder) out.folderUid = folder;
  for (const [tag, key] of [
    ['GreaterThan', 'after'],
    ['LessThan', 'before'],
  ] as const) {
    const v = textOf(kid(and, tag), 'Value');
    if (v) {
      const d = new Date(v);
      if (Number.isNaN(d.getTime())) return null;
      out[key] = d;
    }
  }
  return out.q || out.folderUid || out.after || out.before ? out : null;
}

async function mailbox(
  r: EasRequest,
  query: WbxmlElement | undefined,
  options: WbxmlElement | undefined,
  range: { from: number; to: number },
) {
  const q = mailQuery(query);
  if (!q) return store(STATUS.invalid);
  if (q.folderUid && !r.device.folders[q.folderUid]) return store(STATUS.notFound);
  // One extra result says whether more exist; Total counts what was seen (a lower bound past the page).
  const rows = await r.caller.searchMail({ mailboxUid: r.mailboxUid, ...q, limit: Math.min(200, range.to + 2) });
  const page = rows.slice(range.from, range.to + 1);
  const prefs = bodyPreferences(options);
  const results: WbxmlElement[] = [];
  for (const row of page)
    results.push(
      se('Result', [
        as('Class', 'Email'),
        se('LongId', String(row.uid)),
        as('CollectionId', String(row.folderUid)),
        se('Properties', await mailData(r.caller, row, prefs, mimeSupportOf(options))),
      ]),
    );
  return store(STATUS.ok, results, range, rows.length);
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const s = kid(r.body ?? undefined, 'Store');
  const answer = (status: number, stores: WbxmlElement[] = []) =>
    wbxml(se('Search', [se('Status', status), ...(stores.length ? [se('Response', stores)] : [])]));
  if (!s) return answer(STATUS.invalid);
  const name = (textOf(s, 'Name') ?? '').toLowerCase();
  const options = kid(s, 'Options');
  const range = rangeOf(options);
  if (!range) return answer(STATUS.ok, [store(STATUS.invalid)]);
  try {
    if (name === 'gal') return answer(STATUS.ok, [await gal(r, textOf(s, 'Query') ?? '', range)]);
    if (name === 'mailbox') return answer(STATUS.ok, [await mailbox(r, kid(s, 'Query'), options, range)]);
  } catch (e) {
    if (isApiError(e)) return answer(STATUS.ok, [store(e.status === 404 ? STATUS.notFound : STATUS.invalid)]);
    throw e;
  }
  return answer(STATUS.ok, [store(STATUS.badStore)]);
}

export const search: EasCommand = { root: { page: 'Search', tag: 'Search' }, handle };
