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
