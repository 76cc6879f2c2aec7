import { FilterRuleModel, FocusedOverrideModel, MailboxModel, type FilterRule, type Mailbox } from '../mail/index.js';
import type { Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { domainOf } from './headers.js';
import { AutoReplyModel, CorrespondentModel, type AutoReply } from './models.js';

/**
 * The mailbox settings delivery reads for an entry (the mailbox record, its filter rules, its
 * out-of-office reply, its Focused overrides for the sender and whether the sender is a known
 * correspondent), read once for a whole scan round: a few queries with IN lists instead of five
 * per entry (on PostgreSQL each query is a round trip). What the round files itself is seen through
 * `reserve` (quota); correspondents it meets are recorded when the round ends.
 */
export interface RoundReads {
  mailbox(uid: string): Row<Mailbox> | null;
  filterRules(mailboxUid: string): Array<Row<FilterRule & { mailboxUid: string }>>;
  autoReply(mailboxUid: string): Row<AutoReply> | null;
  overrides(mailboxUid: string): Array<{ sender: string; classification: 'focused' | 'other' }>;
  isCorrespondent(mailboxUid: string, address: string): boolean;
  /**
   * Spec: delivery rule 4 for a mailbox read at the start of the round: would `size` more bytes,
   * after what earlier entries of the round reserved, take it over its quota? If not, they are
   * reserved (a copy the round files into it counts against the next one).
   */
  reserve(mailboxUid: string, size: number): boolean;
}

/** The sender's address, then @domain and each parent domain: what a Focused override may name. */
export function overrideKeys(sender: string): string[] {
  const labels = domainOf(sender).split('.');
  return [sender, ...labels.slice(0, -1).map((_, i) => `@${labels.slice(i).join('.')}`)];
}

const group = <T extends { mailboxUid: string }>(rows: T[]) => {
  const m = new Map<string, T[]>();
  for (const r of rows) {
    const list = m.get(r.mailboxUid);
    if (list) list.push(r);
    else m.set(r.mailboxUid, [r]);
  }
  return m;
};

/** One read per kind for the round's mailboxes and senders. */
export async function readRound(deps: Pick<Deps, 'store'>, wanted: Array<{ mailboxUid: string; sender: string }>): Promise<RoundReads> {
  const boxes = [...new Set(wanted.map((w) => w.mailboxUid))];
  const senders = [...new Set(wanted.map((w) => w.sender).filter(Boolean))];
  const keys = [...new Set(senders.flatMap(overrideKeys))];
  const { store } = deps;
  const many = 100_000;
  const [mailboxes, rules, replies, overrides, correspondents] = await Promise.all([
    store.repo<Mailbox>(MailboxModel).list({ filter: { uid: { $in: boxes } }, limit: boxes.length }),
    store
      .repo<FilterRule & { mailboxUid: string }>(FilterRuleModel)
      .list({ filter: { mailboxUid: { $in: boxes }, enabled: true }, sort: [{ field: 'position', dir: 'asc' }], limit: many }),
    store.repo<AutoReply>(AutoReplyModel).list({ filter: { mailboxUid: { $in: boxes } }, limit: many }),
    keys.length
      ? store
          .repo<{ mailboxUid: string; sender: string; classification: 'focused' | 'other' }>(FocusedOverrideModel)
          .list({ filter: { mailboxUid: { $in: boxes }, sender: { $in: keys } }, limit: many })
      : [],
    senders.length
      ? store
          .repo<{ mailboxUid: string; address: string }>(CorrespondentModel)
          .list({ filter: { mailboxUid: { $in: boxes }, address: { $in: senders } }, limit: many })
      : [],
  ]);
  const byUid = new Map(mailboxes.map((b) => [b.uid, b]));
  const rulesOf = group(rules);
  const replyOf = new Map(replies.map((r) => [r.mailboxUid, r]));
  const overridesOf = group(overrides);
  const known = new Set(correspondents.map((c) => `${c.mailboxUid}\0${c.address}`));
  const reserved = new Map<string, number>();
  return {
    mailbox: (uid) => byUid.get(uid) ?? null,
    filterRules: (mailboxUid) => rulesOf.get(mailboxUid) ?? [],
    autoReply: (mailboxUid) => replyOf.get(mailboxUid) ?? null,
    overrides: (mailboxUid) => overridesOf.get(mailboxUid) ?? [],
    isCorrespondent: (mailboxUid, address) => known.has(`${mailboxUid}\0${address}`),
    reserve(mailboxUid, size) {
      const box = byUid.get(mailboxUid);
      const before = reserved.get(mailboxUid) ?? 0;
      if (box && box.quotaBytes > 0 && box.usedBytes + before + size > box.quotaBytes) return false;
      reserved.set(mailboxUid, before + size);
      return true;
    },
  };
}
