// The search form's filters as the query of GET /api/mail/search: the date range covers whole days
// in the user's time zone (the "to" day included).

export interface SearchForm {
  q: string;
  from: string;
  to: string;
  subject: string;
  hasAttachments: boolean;
  /** yyyy-mm-dd from a date input, or ''. */
  after: string;
  before: string;
  folderUid: string;
}

export const EMPTY_SEARCH: SearchForm = {
  q: '',
  from: '',
  to: '',
  subject: '',
  hasAttachments: false,
  after: '',
  before: '',
  folderUid: '',
};

/** Midnight at the start of a yyyy-mm-dd day where the user is, `days` later. */
function startOfDay(day: string, days = 0): Date {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d + days);
}

/** Whether the form asks anything (an empty search is no search). */
export const asksSomething = (f: SearchForm): boolean =>
  Boolean(f.q.trim() || f.from.trim() || f.to.trim() || f.subject.trim() || f.hasAttachments || f.after || f.before);

/** The query string of the search (mailbox, words, filters, page). */
export function searchQuery(mailboxUid: string, f: SearchForm, page: number, limit: number): string {
  const p = new URLSearchParams({ mailboxUid });
  for (const key of ['q', 'from', 'to', 'subject'] as const) if (f[key].trim()) p.set(key, f[key].trim());
  if (f.hasAttachments) p.set('hasAttachments', 'true');
  if (f.after) p.set('after', startOfDay(f.after).toISOString());
  if (f.before) p.set('before', startOfDay(f.before, 1).toISOString());
  if (f.folderUid) p.set('folderUid', f.folderUid);
  p.set('limit', String(limit));
  p.set('page', String(page));
  return p.toString();
}

/** What the local index of encrypted mail is asked: the search words, else the subject's words. */
export const localWords = (f: SearchForm): string => f.q.trim() || f.subject.trim();

const wordsOf = (s: string) =>
  s
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/** An encrypted message's record, as the local index's hits are fetched. */
export interface LocalRecord {
  folderUid: string;
  date: string;
  fromAddress: string;
  to: Array<{ address: string }>;
  cc: Array<{ address: string }>;
}

/** Within the form's dates (whole days where the user is, the "until" day included). */
function withinDates(f: SearchForm, date: string): boolean {
  const t = Date.parse(date);
  return (!f.after || t >= startOfDay(f.after).getTime()) && (!f.before || t < startOfDay(f.before, 1).getTime());
}

/**
 * A hit of the local index passes the form's filters as the server applies them to other mail:
 * folder, exact sender and recipient (To or Cc) addresses, dates; the subject's words (each a word
 * or the start of one) and attachments are the decrypted message's (`local`), which the server cannot see.
 */
export function matchesLocal(f: SearchForm, m: LocalRecord, local: { subject: string; files: boolean } | null): boolean {
  if (!local || (f.folderUid && m.folderUid !== f.folderUid) || (f.hasAttachments && !local.files)) return false;
  const from = f.from.trim().toLowerCase();
  if (from && m.fromAddress.toLowerCase() !== from) return false;
  const to = f.to.trim().toLowerCase();
  if (to && ![...m.to, ...m.cc].some((a) => a.address.toLowerCase() === to)) return false;
  const subject = wordsOf(local.subject);
  return withinDates(f, m.date) && wordsOf(f.subject).every((w) => subject.some((s) => s.startsWith(w)));
}
