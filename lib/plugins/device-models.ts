import { z } from 'zod';
import { defineModel } from '../storage/index.js';

// Spec: Stored state of the mobile-sync plugin. The plugin never touches these records directly:
// the host reads and writes them for the signed-in owner of the device (device-state.ts), and the
// administration routes (/api/mail/devices) read them for administrators.

export const WIPE_STATES = ['none', 'requested', 'account-only', 'wiped'] as const;

/** DeviceSyncState: one per user and device (one mailbox: the user's own). */
export const deviceFields = {
  userUid: z.string().min(1),
  mailboxUid: z.string().min(1),
  deviceId: z.string().min(1).max(64),
  deviceType: z.string().max(64).default(''),
  userAgent: z.string().max(256).default(''),
  protocolVersion: z.string().max(8).default(''),
  /** The policy key the device acknowledged (0: never provisioned). */
  policyKey: z.number().int().nonnegative().default(0),
  /** A key handed out in the first Provision step and not yet acknowledged (0: none). */
  pendingPolicyKey: z.number().int().nonnegative().default(0),
  wipe: z.enum(WIPE_STATES).default('none'),
  blocked: z.boolean().default(false),
  /** FolderSync: the key the device holds and the folder list it was given with it. */
  folderSyncKey: z.number().int().nonnegative().default(0),
  folders: z.record(z.string(), z.object({ parentId: z.string(), name: z.string(), type: z.number().int() })).default({}),
  /** The folders of the last Ping with folders, and its heartbeat (a Ping without them reuses both). */
  pingFolders: z.array(z.string()).default([]),
  pingHeartbeat: z.number().int().nonnegative().default(0),
  /** Settings DeviceInformation, as the device sent it. */
  deviceInfo: z.record(z.string(), z.string()).default({}),
  lastSyncAt: z.date().nullable().default(null),
  /** The collections of the last full Sync request, without keys and commands (an empty Sync repeats it). */
  lastSyncRequest: z.string().default(''),
};
export const EasDeviceModel = defineModel({
  name: 'eas_device',
  table: 'eas_devices',
  fields: deviceFields,
  indexes: [{ fields: ['userUid', 'deviceId'], unique: true }, { fields: ['mailboxUid'] }, { fields: ['lastSyncAt'] }],
});
export type EasDeviceFields = z.infer<z.ZodObject<typeof deviceFields>>;

/** EasCollectionState: one per device and folder. */
export const collectionFields = {
  deviceUid: z.string().min(1),
  folderUid: z.string().min(1),
  syncKey: z.number().int().nonnegative().default(0),
  /** FilterType the device asked for (0: everything). */
  filterType: z.number().int().nonnegative().default(0),
  /** The initial fill walks the folder by uid: the last uid sent, until `filled`. */
  cursor: z.string().nullable().default(null),
  filled: z.boolean().default(false),
  heldCount: z.number().int().nonnegative().default(0),
  /** The previous round: the key the device sent, a digest of what it asked, and the outline of the answer (a repeat gets it again, eas/sync-replay.ts). */
  previousKey: z.number().int().nonnegative().default(0),
  previousRequest: z.string().default(''),
  previousAnswer: z.string().default(''),
};
export const EasCollectionModel = defineModel({
  name: 'eas_collection',
  table: 'eas_collections',
  fields: collectionFields,
  indexes: [{ fields: ['deviceUid', 'folderUid'], unique: true }],
});
export type EasCollectionFields = z.infer<z.ZodObject<typeof collectionFields>>;

/** EasCollectionChunk: what a device holds of a collection, item id → change key, in slices. */
export const chunkFields = {
  collectionUid: z.string().min(1),
  seq: z.number().int().nonnegative(),
  items: z.record(z.string(), z.string()),
};
export const EasChunkModel = defineModel({
  name: 'eas_collection_chunk',
  table: 'eas_collection_chunks',
  fields: chunkFields,
  indexes: [{ fields: ['collectionUid', 'seq'] }],
});

export const DEVICE_MODELS = [EasDeviceModel, EasCollectionModel, EasChunkModel];
