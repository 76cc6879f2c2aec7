import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { defineModel, type Store } from '../storage/index.js';

/**
 * A tombstone per address of an erased mailbox: who erased it and when. It keeps no mailbox uid (the
 * mailbox is gone); the erasure request it names holds the rest. While a tombstone stands the
 * address cannot be given to a new mailbox, so mail meant for the erased person is never silently
 * delivered to someone else. An elevated administrator releases the addresses on purpose
 * (POST /api/mail/erasure-requests/:id/release-addresses, audited). Kept with the mailboxes, which
 * check it; lib/lifecycle writes and releases the tombstones.
 */
export const erasedAddressFields = {
  address: z.string(),
  erasedAt: z.date(),
  erasedBy: z.string(),
  requestUid: z.string(),
};
export const ErasedAddressModel = defineModel({
  name: 'erased_address',
  table: 'erased_addresses',
  fields: erasedAddressFields,
  indexes: [{ fields: ['address'], unique: true }, { fields: ['requestUid'] }],
});
export type ErasedAddress = z.infer<z.ZodObject<typeof erasedAddressFields>>;

/** Refuses addresses that belonged to an erased mailbox (409 api-112), naming when it was erased. */
export async function checkNotErased(store: Store, addresses: readonly string[]): Promise<void> {
  if (!addresses.length) return;
  const hit = await store.repo<ErasedAddress>(ErasedAddressModel).findOne({ address: { $in: [...addresses] } });
  if (hit) {
    throw new ApiError(
      'api-112',
      `the address ${hit.address} belonged to a mailbox erased on ${hit.erasedAt.toISOString().slice(0, 10)}; an administrator must release it (POST /api/mail/erasure-requests/${hit.requestUid}/release-addresses) before it is used again`,
    );
  }
}
