import { z } from 'zod';

/** The manifest.json of a mailbox export: how the import job puts each mbox back into its folder. */
export const MANIFEST_FORMAT = 'svcmail-mailbox-export';

const manifestMessage = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  size: z.number().int().nonnegative(),
  seen: z.boolean().default(false),
  flagged: z.boolean().default(false),
  answered: z.boolean().default(false),
  forwarded: z.boolean().default(false),
  draft: z.boolean().default(false),
  labels: z.array(z.string().max(100)).max(100).default([]),
  smime: z.enum(['encrypted', 'signed']).nullable().default(null),
});

const manifestFolder = z.object({
  path: z.array(z.string().min(1).max(255)).min(1).max(64),
  role: z.string().nullable(),
  file: z.string().min(1).max(300),
  totalCount: z.number().int().nonnegative(),
  unreadCount: z.number().int().nonnegative(),
  missing: z.number().int().nonnegative().default(0),
  messages: z.array(manifestMessage),
});

export const manifestSchema = z.object({
  format: z.literal(MANIFEST_FORMAT),
  version: z.literal(1),
  exportedAt: z.string(),
  mailbox: z.object({ address: z.string(), name: z.string() }),
  labels: z.array(z.object({ name: z.string().min(1).max(100), color: z.string().nullable() })).default([]),
  folders: z.array(manifestFolder).max(10_000),
  calendar: z.object({ file: z.string(), events: z.number().int() }).optional(),
  contacts: z.object({ file: z.string(), contacts: z.number().int() }).optional(),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type ManifestFolder = z.infer<typeof manifestFolder>;
export type ManifestMessage = z.infer<typeof manifestMessage>;
