import { z } from 'zod';
import { AclEntryModel, ownersOf, type AclEntryRecord } from '../acl/index.js';
import { DomainModel } from '../settings/index.js';
import { ADMIN_ONLY } from '../settings/index.js';
import { readMailboxPolicy } from '../settings/index.js';
import { ApiError } from '../errors/index.js';
import { defineResource } from '../resources/index.js';
import { defineModel, type Store } from '../storage/index.js';
import { syncAddresses } from './addresses.js';
import { directoryIndex } from './directory-terms.js';
import { KeyDirectoryModel, syncDirectory } from './key-directory.js';
import { createSystemFolders } from './folders.js';
import { checkNotErased } from './tombstones.js';

export const emailAddress = z
  .string()
  .trim()
  .toLowerCase()
  .max(320)
  .pipe(z.email({ message: 'must be a plain address such as user@example.org' }));

const receiptPolicy = z.enum(['always', 'never', 'ask']);

export const mailboxFields = {
  address: emailAddress,
  name: z.string().trim().max(200).default(''),
  aliases: z.array(emailAddress).max(100).default([]),
  blockedSenders: z.array(z.string().trim().toLowerCase().min(1).max(320)).max(10_000).default([]),
  safeSenders: z.array(z.string().trim().toLowerCase().min(1).max(320)).max(10_000).default([]),
  /** Bytes; 0 means no quota. */
  quotaBytes: z.number().int().nonnegative().default(0),
  usedBytes: z.number().int().nonnegative().default(0),
  /** Whether read receipts are sent to internal, federated and external senders who ask. */
  receiptSettings: z
    .object({ internal: receiptPolicy, federated: receiptPolicy, external: receiptPolicy })
    .default({ internal: 'ask', federated: 'ask', external: 'never' }),
};

export const MailboxModel = defineModel({
  name: 'mailbox',
  table: 'mailboxes',
  fields: mailboxFields,
  indexes: [{ fields: ['address'], unique: true }],
  valueIndexes: [directoryIndex],
});
export type Mailbox = z.infer<z.ZodObject<typeof mailboxFields>>;

/** Whether a sender (lower-cased address) is on a blocked or safe senders list: its address, its domain, or @domain. */
export function onSenderList(list: readonly string[], sender: string): boolean {
  if (!sender) return false;
  const d = sender.slice(sender.lastIndexOf('@') + 1).toLowerCase();
  return list.some((e) => e === sender || e === d || e === `@${d}`);
}

/** The domain part must be served (the domain itself or one of its aliases). */
/** Spec: /api/system/mailbox-policy — the deployment's alias limit. */
async function checkAliasLimit(store: Store, aliases: readonly string[]): Promise<void> {
  const { maxAliases } = await readMailboxPolicy({ store });
  if (aliases.length > maxAliases)
    throw new ApiError('api-106', `at most ${maxAliases} aliases per mailbox (mailbox-policy maxAliases)`, {
      details: [{ path: 'aliases', message: `more than ${maxAliases}` }],
    });
}

async function checkDomains(store: Store, addresses: readonly string[]): Promise<void> {
  const domains = await store.repo<{ name: string; aliases: string[] }>(DomainModel).list({ limit: 10_000 });
  const served = new Set(domains.flatMap((d) => [d.name, ...d.aliases]));
  for (const a of addresses) {
    const domain = a.slice(a.lastIndexOf('@') + 1);
    if (!served.has(domain))
      throw new ApiError('api-106', `${a}: the domain ${domain} is not served here; add it under /api/mail/domains first`);
  }
}

export const mailboxesResource = defineResource({
  group: 'mail',
  name: 'mailboxes',
  entity: 'mailbox',
  summary:
    'Mailboxes: primary address, aliases, blocked and safe senders, quota, receipt settings. Administrators create them and read them only with ?scope=admin',
  model: MailboxModel,
  scope: 'mailbox',
  mailboxField: 'uid',
  defaultAcl: [],
  createAcl: ADMIN_ONLY,
  audit: true,
  // A mailbox goes away only through an erasure request (administration), never by a plain DELETE.
  operations: ['list', 'head', 'get', 'create', 'update', 'updateProperty', 'bulkUpdate'],
  serverFields: ['usedBytes'],
  immutableFields: ['address'],
  adminFields: ['aliases', 'quotaBytes', 'name'],
  // quotaBytes and receiptSettings without defaults on create: left out, the mailbox policy's defaults apply.
  createInput: {
    owners: z.array(z.string().trim().min(1).max(200)).min(1).max(100),
    quotaBytes: mailboxFields.quotaBytes.removeDefault().optional(),
    receiptSettings: mailboxFields.receiptSettings.removeDefault().optional(),
  },
  eventChannels: (rec) => [rec.uid],
  async adminView(ctx, rec) {
    // Spec: ?scope=admin returns administrative details only — addresses, owners and quota. Never mail or keys.
    return {
      uid: rec.uid,
      version: rec.version,
      address: rec.address,
      aliases: rec.aliases,
      owners: await ownersOf(ctx.store, rec.uid),
      quotaBytes: rec.quotaBytes,
      usedBytes: rec.usedBytes,
    };
  },
  hooks: {
    async beforeCreate(ctx, data) {
      await checkDomains(ctx.store, [data.address as string, ...(data.aliases as string[])]);
      // An erased mailbox's addresses stay reserved until released (./tombstones.ts).
      await checkNotErased(ctx.store, [data.address as string, ...(data.aliases as string[])]);
      await checkAliasLimit(ctx.store, data.aliases as string[]);
      const policy = await readMailboxPolicy(ctx);
      return {
        ...data,
        quotaBytes: data.quotaBytes ?? policy.defaultQuotaBytes,
        receiptSettings: data.receiptSettings ?? policy.defaultReceiptSettings,
      };
    },
    async afterCreate(ctx, rec, input) {
      await syncAddresses(ctx.store, rec.uid, rec.address as string, rec.aliases as string[]);
      const acl = ctx.store.repo<AclEntryRecord>(AclEntryModel);
      for (const owner of new Set(input.owners as string[])) {
        await acl.create({ resource: 'mailboxes', resourceUid: rec.uid, subject: `user:${owner}`, rights: ['owner'], mailboxUid: rec.uid });
      }
      await createSystemFolders(ctx.store, rec.uid);
    },
    async beforeUpdate(ctx, _rec, patch) {
      if (patch.aliases) await checkDomains(ctx.store, patch.aliases as string[]);
      if (patch.aliases) await checkNotErased(ctx.store, patch.aliases as string[]);
      if (patch.aliases) await checkAliasLimit(ctx.store, patch.aliases as string[]);
      return patch;
    },
    async afterUpdate(ctx, before, after) {
      if (JSON.stringify(before.aliases) === JSON.stringify(after.aliases)) return;
      const addresses = [after.address as string, ...(after.aliases as string[])];
      await syncAddresses(ctx.store, after.uid, addresses[0], addresses.slice(1));
      // An enrolled mailbox is discoverable under every address it answers to (Spec: Key-discovery hash).
      if (await ctx.store.repo(KeyDirectoryModel).count({ mailboxUid: after.uid })) await syncDirectory(ctx.store, after.uid, addresses);
    },
  },
});
