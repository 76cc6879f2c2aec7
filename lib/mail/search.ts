import { z } from 'zod';
import { AclEntryModel, type AclEntryRecord } from '../acl/index.js';
import { requireSignedIn } from '../auth/index.js';
import type { ResourceService } from '../resources/index.js';
import type { Ctx } from '../context/index.js';
import type { Filter, ListQuery, Repo } from '../storage/index.js';
import { MessageModel, type Message, type MessageRecord, type ParsedMessage } from './messages.js';

/** The full-text document of a message: subject, every address and name, plain text (never S/MIME ciphertext). */
export function searchDocument(parsed: Pick<ParsedMessage, 'fields' | 'text'>): string {
  const f = parsed.fields;
  const people = [f.from, ...f.to, ...f.cc, ...f.bcc].filter(Boolean).map((a) => `${a!.name} ${a!.address}`);
  return [f.subject, ...people, f.smime === 'encrypted' ? '' : parsed.text].join('\n');
}

const bool = z.enum(['true', 'false']).transform((v) => v === 'true');
const instant = z.coerce.date().meta({ type: 'string', format: 'date-time' });
/** The search's query parameters; an unknown one is refused (400 api-106). */
export const searchQuery = z
  .object({
    mailboxUid: z.string().min(1).optional().describe('absent: the mailboxes the caller owns'),
    q: z.string().max(500).optional(),
    subject: z
      .string()
      .max(500)
      .optional()
      .describe(
        'words the subject must hold (each a word or the start of one, case ignored), looked for among the first 20 000 full-text hits',
      ),
    folderUid: z.string().min(1).optional(),
    from: z.string().trim().toLowerCase().max(320).optional(),
    to: z.string().trim().toLowerCase().max(320).optional(),
    after: instant.optional().describe('sent at or after'),
    before: instant.optional().describe('sent before'),
    hasAttachments: bool.optional(),
    unread: bool.optional(),
    flagged: bool.optional(),
    label: z.string().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    page: z.coerce.number().int().min(0).max(100_000).default(0),
  })
  .strict();
export type SearchQuery = z.infer<typeof searchQuery>;

/** The mailboxes the caller owns, for a search that names none (like a list without a filter: yours). */
async function ownMailboxes(ctx: Ctx): Promise<string[]> {
  const who = requireSignedIn(ctx.principal);
  const entries = await ctx.store
    .repo<AclEntryRecord>(AclEntryModel)
    .list({ filter: { resource: 'mailboxes', subject: `user:${who.uid}` }, limit: 10_000 });
  return [...new Set(entries.filter((e) => e.rights.includes('owner')).map((e) => e.resourceUid))];
}

/** Messages of the mailboxes matching the words and filters, newest first. The caller checked the mailboxes. */
export async function searchMessages(
  ctx: Pick<Ctx, 'store'>,
  s: Omit<SearchQuery, 'mailboxUid'> & { mailboxUids: string[] },
): Promise<MessageRecord[]> {
  const filter: Filter = { mailboxUid: { $in: s.mailboxUids } };
  if (s.folderUid) filter.folderUid = s.folderUid;
  if (s.from) filter.fromAddress = s.from;
  // Recipients (To or Cc) and labels are lists: value indexes of MessageModel make them exact store queries.
  if (s.to) filter.recipients = { $has: s.to };
  if (s.label) filter.labels = { $has: s.label };
  if (s.after || s.before) filter.date = { ...(s.after ? { $gte: s.after } : {}), ...(s.before ? { $lt: s.before } : {}) };
  if (s.hasAttachments !== undefined) filter.hasAttachments = s.hasAttachments;
  if (s.unread !== undefined) filter.seen = !s.unread;
  if (s.flagged !== undefined) filter.flagged = s.flagged;
  const repo = ctx.store.repo<Message>(MessageModel);
  const words = [s.q ?? '', s.subject ?? ''].join(' ').trim();
  const q: ListQuery = {
    filter,
    sort: [
      { field: 'date', dir: 'desc' },
      { field: 'uid', dir: 'desc' },
    ],
    limit: s.limit,
    offset: s.page * s.limit,
  };
  if (s.subject && wordsOf(s.subject).length) return subjectMatches(repo, words, q, wordsOf(s.subject));
  return words ? repo.search(words, q) : repo.list(q);
}

/** Lower-cased words without accents (as the full-text index compares them). */
const wordsOf = (text: string): string[] =>
  text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .match(/[\p{L}\p{N}]+/gu) ?? [];
const SUBJECT_BATCH = 200;
/** Full-text hits read at most for one subject search (deeper pages than that answer empty). */
const SUBJECT_SCAN_MAX = 20_000;

/**
 * A search with subject words: the full-text search (which holds them somewhere) read in batches,
 * keeping the messages whose subject has each word (or a word starting with it), until the page is
 * full or SUBJECT_SCAN_MAX hits were read (a narrower search finds the rest).
 */
async function subjectMatches(repo: Repo<Message>, words: string, q: ListQuery, want: string[]): Promise<MessageRecord[]> {
  const limit = q.limit ?? 50;
  const skip = q.offset ?? 0;
  const found: MessageRecord[] = [];
  for (let offset = 0; found.length < skip + limit && offset < SUBJECT_SCAN_MAX; offset += SUBJECT_BATCH) {
    const batch = await repo.search(words, { ...q, limit: SUBJECT_BATCH, offset });
    for (const m of batch) {
      const subject = wordsOf(m.subject);
      if (want.every((w) => subject.some((x) => x.startsWith(w)))) found.push(m);
    }
    if (batch.length < SUBJECT_BATCH) break;
  }
  return found.slice(skip, skip + limit);
}

/**
 * The search as a caller asks it: a named mailbox is checked with trusted roles stripped (not yours
 * is 404, for administrators too); without one, the mailboxes the caller owns. Messages as the
 * generic routes show them.
 */
export async function searchFor(ctx: Ctx, service: ResourceService, query: SearchQuery): Promise<Record<string, unknown>[]> {
  const { mailboxUid, ...s } = query;
  if (mailboxUid) await service.load(ctx, service.registry.get('mailboxes'), mailboxUid, 'read');
  const mailboxUids = mailboxUid ? [mailboxUid] : await ownMailboxes(ctx);
  if (!mailboxUids.length) return [];
  const decl = service.registry.get('messages');
  return (await searchMessages(ctx, { ...s, mailboxUids })).map((m) => service.view(decl, m as never));
}
