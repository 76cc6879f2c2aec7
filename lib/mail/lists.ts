// Distribution lists: an address whose mail goes to its members (Spec: distribution lists). The
// record lives with the other addresses; lib/ingest expands lists and serves their admin routes.
import { z } from 'zod';
import { defineModel } from '../storage/index.js';
import { directoryIndex } from './directory-terms.js';

export const distributionListFields = {
  address: z
    .string()
    .trim()
    .toLowerCase()
    .max(320)
    .pipe(z.email({ message: 'must be a plain address' })),
  name: z.string().trim().max(200).default(''),
  /** Member addresses: mailboxes, other lists, or external addresses (relayed at once). */
  members: z.array(z.string().trim().toLowerCase().max(320).pipe(z.email())).max(10_000).default([]),
  /** Only verified senders who are members may post. */
  membersOnly: z.boolean().default(false),
  /** Whether members outside the served domains are accepted and relayed. */
  allowExternalMembers: z.boolean().default(true),
};
export type DistributionList = z.infer<z.ZodObject<typeof distributionListFields>>;
export const DistributionListModel = defineModel({
  name: 'distribution_list',
  table: 'distribution_lists',
  fields: distributionListFields,
  indexes: [{ fields: ['address'], unique: true }],
  // The global address list pages through mailboxes and lists by prefix (lib/mail/directory.ts).
  valueIndexes: [directoryIndex],
});
