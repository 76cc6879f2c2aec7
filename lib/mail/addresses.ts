import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { defineModel, type Store } from '../storage/index.js';

/** Every address a mailbox answers to, unique across the deployment (recipient resolution reads it). */
export const addressFields = {
  address: z.string(),
  mailboxUid: z.string(),
  kind: z.enum(['primary', 'alias']),
};

export const AddressModel = defineModel({
  name: 'mail_address',
  table: 'mail_addresses',
  fields: addressFields,
  indexes: [{ fields: ['address'], unique: true }, { fields: ['mailboxUid'] }],
});

type AddressRec = z.infer<z.ZodObject<typeof addressFields>>;

/** Makes the address index hold exactly these addresses for the mailbox; a taken address is api-112. */
export async function syncAddresses(store: Store, mailboxUid: string, primary: string, aliases: readonly string[]): Promise<void> {
  const repo = store.repo<AddressRec>(AddressModel);
  const wanted = new Map<string, 'primary' | 'alias'>([[primary, 'primary'], ...aliases.map((a) => [a, 'alias'] as [string, 'alias'])]);
  const current = await repo.list({ filter: { mailboxUid }, limit: 10_000 });
  for (const row of current) {
    if (wanted.get(row.address) === row.kind) wanted.delete(row.address);
    else await repo.delete(row.uid);
  }
  for (const [address, kind] of wanted) {
    try {
      await repo.create({ address, mailboxUid, kind });
    } catch (e) {
      if (e instanceof ApiError && e.code === 'api-112') throw new ApiError('api-112', `the address ${address} is already in use`);
      throw e;
    }
  }
}
