import { z } from 'zod';
import { defineModel } from '../storage/index.js';

// sendAs: may send with the mailbox's addresses as From or Sender (Spec: send — shared mailboxes with send-as rights).
export const RIGHTS = ['read', 'write', 'create', 'delete', 'share', 'owner', 'sendAs'] as const;
export type Right = (typeof RIGHTS)[number];

/** user:<uid>, role:<name>, or authenticated (any signed-in user). */
export const subjectSchema = z
  .string()
  .regex(/^(user:[^\s:]+|role:[^\s:]+|authenticated)$/, 'must be user:<uid>, role:<name> or authenticated');

export const aclEntryFields = {
  /** The resource name of the record the entry is on (mailboxes, folders, domains, …). */
  resource: z.string().min(1),
  resourceUid: z.string().min(1),
  subject: subjectSchema,
  rights: z.array(z.enum(RIGHTS)).min(1),
  /** For mailbox-scoped records: the mailbox they belong to (lists of a user's mailboxes use it). */
  mailboxUid: z.string().nullable().optional(),
};

export const AclEntryModel = defineModel({
  name: 'acl_entry',
  table: 'acl_entries',
  fields: aclEntryFields,
  indexes: [{ fields: ['resourceUid'] }, { fields: ['resource', 'subject'] }, { fields: ['resourceUid', 'subject'], unique: true }],
});

export type AclEntryRecord = z.infer<z.ZodObject<typeof aclEntryFields>>;

export interface AclGrant {
  subject: string;
  rights: readonly Right[];
}
