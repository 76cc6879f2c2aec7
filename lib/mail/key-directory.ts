// The key-discovery index (Spec: Key-discovery hash): which mailbox holds keys for a local part of a
// domain. Kept with the mailboxes, whose addresses it follows; lib/keys answers lookups from it.
import { createHash } from 'node:crypto';
import z32 from 'z32';
import { z } from 'zod';
import { defineModel, type Store } from '../storage/index.js';

/** Key-discovery index: z-base-32 SHA-256 of a local part, per domain, to the mailbox holding keys. */
export const keyDirectoryFields = { hash: z.string(), domain: z.string(), mailboxUid: z.string() };
export const KeyDirectoryModel = defineModel({
  name: 'key_directory',
  table: 'key_directory',
  fields: keyDirectoryFields,
  indexes: [{ fields: ['hash', 'domain'], unique: true }, { fields: ['mailboxUid'] }],
});
export type KeyDirectoryEntry = z.infer<z.ZodObject<typeof keyDirectoryFields>>;

/** Spec: Key-discovery hash — z-base-32 SHA-256 of the lowercased local part. */
export function discoveryHash(localPart: string): string {
  return z32.encode(createHash('sha256').update(localPart.toLowerCase(), 'utf8').digest());
}

export function splitAddress(address: string): { local: string; domain: string } {
  const at = address.lastIndexOf('@');
  return { local: address.slice(0, at), domain: address.slice(at + 1).toLowerCase() };
}

/** Makes the discovery index hold exactly these addresses for the mailbox. */
export async function syncDirectory(store: Store, mailboxUid: string, addresses: readonly string[]): Promise<void> {
  const repo = store.repo<KeyDirectoryEntry>(KeyDirectoryModel);
  await repo.deleteMany({ mailboxUid });
  for (const a of new Set(addresses.map((x) => x.toLowerCase()))) {
    const { local, domain } = splitAddress(a);
    const hash = discoveryHash(local);
    await repo.deleteMany({ hash, domain });
    await repo.create({ hash, domain, mailboxUid });
  }
}
