import { z } from 'zod';
import { ApiError, invalid } from '../errors/index.js';
import { defineResource } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { defineModel, type Store } from '../storage/index.js';

export const FOLDER_ROLES = ['inbox', 'drafts', 'sent', 'trash', 'junk', 'outbox', 'archive'] as const;
export type FolderRole = (typeof FOLDER_ROLES)[number];

/** Created with every mailbox (Spec: folders Inbox, Drafts, Sent Items, Deleted Items, Junk, Outbox, Archive). */
export const SYSTEM_FOLDERS: ReadonlyArray<{ role: FolderRole; name: string }> = [
  { role: 'inbox', name: 'Inbox' },
  { role: 'drafts', name: 'Drafts' },
  { role: 'sent', name: 'Sent Items' },
  { role: 'trash', name: 'Deleted Items' },
  { role: 'junk', name: 'Junk' },
  { role: 'outbox', name: 'Outbox' },
  { role: 'archive', name: 'Archive' },
];

const folderName = z
  .string()
  .trim()
  .min(1)
  .max(255)
  .refine((s) => ![...s].some((ch) => ch === '/' || ch.charCodeAt(0) < 0x20), 'must not contain control characters or /');

export const folderFields = {
  mailboxUid: z.string().min(1),
  parentUid: z.string().nullable().default(null),
  name: folderName,
  role: z.enum(FOLDER_ROLES).nullable().default(null),
  unreadCount: z.number().int().nonnegative().default(0),
  totalCount: z.number().int().nonnegative().default(0),
  /** Its conversation records are built (lib/mail/threads.ts ensureThreads); internal, never shown. */
  threadsReady: z.boolean().default(false),
};

export const FolderModel = defineModel({
  name: 'folder',
  table: 'folders',
  fields: folderFields,
  indexes: [{ fields: ['mailboxUid', 'parentUid'] }, { fields: ['mailboxUid', 'role'] }],
});

export type Folder = z.infer<z.ZodObject<typeof folderFields>>;

export async function createSystemFolders(store: Store, mailboxUid: string): Promise<void> {
  const repo = store.repo<Folder>(FolderModel);
  for (const f of SYSTEM_FOLDERS)
    await repo.create({ mailboxUid, parentUid: null, name: f.name, role: f.role, unreadCount: 0, totalCount: 0, threadsReady: true });
}

/** Names are unique among siblings (case-insensitively), and a parent is a folder of the same mailbox, never a descendant. */
async function checkPlacement(ctx: Ctx, mailboxUid: string, parentUid: string | null, name: string, selfUid?: string): Promise<void> {
  const repo = ctx.store.repo<Folder>(FolderModel);
  if (parentUid) {
    let cursor: string | null = parentUid;
    for (let depth = 0; cursor; depth++) {
      if (cursor === selfUid)
        throw invalid('a folder cannot be moved into itself or its subfolders', [{ path: 'parentUid', message: 'cycle' }]);
      if (depth > 64) throw invalid('folders nest at most 64 levels deep', [{ path: 'parentUid', message: 'too deep' }]);
      const p: (Folder & { uid: string }) | null = await repo.get(cursor);
      if (!p || p.mailboxUid !== mailboxUid)
        throw invalid('parentUid must be a folder of the same mailbox', [{ path: 'parentUid', message: 'unknown folder' }]);
      cursor = p.parentUid;
    }
  }
  const siblings = await repo.list({ filter: { mailboxUid, parentUid }, limit: 10_000 });
  if (siblings.some((s) => s.uid !== selfUid && s.name.toLowerCase() === name.toLowerCase()))
    throw new ApiError('api-112', `a folder named ${name} already exists here`);
}

export const foldersResource = defineResource({
  group: 'mail',
  name: 'folders',
  entity: 'folder',
  summary: 'Folders of a mailbox with unreadCount and totalCount; the system folders are created with the mailbox',
  model: FolderModel,
  scope: 'mailbox',
  mailboxField: 'mailboxUid',
  parent: { resource: 'mailboxes', field: 'mailboxUid' },
  defaultAcl: [],
  serverFields: ['unreadCount', 'totalCount', 'role', 'threadsReady'],
  hiddenFields: ['threadsReady'],
  // Spec: Events 4 and 7 — folder events go to the folder's own channel, not the mailbox's.
  eventChannels: (rec) => [rec.uid],
  hooks: {
    async beforeCreate(ctx, data) {
      await checkPlacement(ctx, data.mailboxUid as string, (data.parentUid as string | null) ?? null, data.name as string);
      // A new folder is empty: its conversations are complete from the start.
      return { ...data, threadsReady: true };
    },
    async beforeUpdate(ctx, rec, patch) {
      if (rec.role && (patch.name !== undefined || patch.parentUid !== undefined)) {
        throw new ApiError('api-120', 'system folders cannot be renamed or moved');
      }
      const name = (patch.name as string | undefined) ?? (rec.name as string);
      const parentUid = patch.parentUid !== undefined ? (patch.parentUid as string | null) : (rec.parentUid as string | null);
      if (patch.name !== undefined || patch.parentUid !== undefined)
        await checkPlacement(ctx, rec.mailboxUid as string, parentUid, name, rec.uid);
      return patch;
    },
    async beforeDelete(ctx, rec) {
      if (rec.role) throw new ApiError('api-120', 'system folders cannot be deleted');
      const children = await ctx.store.repo<Folder>(FolderModel).count({ parentUid: rec.uid });
      if (children) throw new ApiError('api-120', 'delete or move the subfolders first');
      if ((rec.totalCount as number) > 0)
        throw new ApiError('api-120', 'empty the folder first (POST /api/mail/folders/:id/empty) or move its messages');
    },
  },
});
