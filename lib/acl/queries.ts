// Questions about the ACL entries of a record, asked of the store directly (no principal, no check).
import type { Store } from '../storage/index.js';
import { AclEntryModel, type AclEntryRecord } from './model.js';

/** The uids of the users who own a mailbox (user:<uid> subjects with the owner right). */
export async function ownersOf(store: Store, mailboxUid: string): Promise<string[]> {
  const entries = await store.repo<AclEntryRecord>(AclEntryModel).list({ filter: { resourceUid: mailboxUid }, limit: 1000 });
  return entries.filter((e) => e.rights.includes('owner') && e.subject.startsWith('user:')).map((e) => e.subject.slice(5));
}
