import { z } from 'zod';
import { writeAudit } from '../audit/index.js';
import { hasTrustedRole, requireTrusted } from '../auth/index.js';
import { notFound } from '../errors/index.js';
import { isoDate } from '../http/index.js';
import { FolderModel, MessageModel, type Folder, type MessageRecord } from '../mail/index.js';
import type { Ctx } from '../context/index.js';
import {
  EasChunkModel,
  EasCollectionModel,
  EasDeviceModel,
  WIPE_STATES,
  type EasCollectionFields,
  type EasDeviceFields,
} from './device-models.js';

// Spec: /api/mail/devices — the mobile devices that sync, for administrators (trusted role) and for
// each device's owner. Lists show the last sync, the policy state and each folder's sync state;
// remote wipe and unblock need fresh elevation and are audited. Nothing here reads mail: `inspect`
// answers why a device does not have a message from the sync state and the message's place and
// date, never its content.

type Device = EasDeviceFields & { uid: string; version: number; createdAt: Date; updatedAt: Date };
type Collection = EasCollectionFields & { uid: string; updatedAt: Date };

/** FilterType → days, as the mobile-sync plugin applies it (lib/plugins/eas/sync.ts). */
const FILTER_DAYS: Record<number, number> = { 1: 1, 2: 3, 3: 7, 4: 14, 5: 31, 6: 92, 7: 183 };

export const deviceFolderView = z.object({
  folderUid: z.string(),
  folderName: z.string().nullable(),
  syncKey: z.number(),
  items: z.number().describe('items the device holds'),
  filterType: z.number(),
  complete: z.boolean().describe('false while more items wait for the device (MoreAvailable)'),
  lastSyncAt: isoDate,
});

export const deviceView = z.object({
  uid: z.string(),
  version: z.number(),
  userUid: z.string(),
  mailboxUid: z.string(),
  deviceId: z.string(),
  deviceType: z.string(),
  userAgent: z.string(),
  protocolVersion: z.string(),
  provisioned: z.boolean().describe('the device acknowledged the current policy'),
  wipe: z.enum(WIPE_STATES),
  blocked: z.boolean(),
  deviceInfo: z.record(z.string(), z.string()),
  lastSyncAt: isoDate.nullable(),
  createdAt: isoDate,
  folders: z.array(deviceFolderView),
});
export type DeviceView = z.infer<typeof deviceView>;

export const wipeRequest = z.strictObject({
  accountOnly: z.boolean().optional().describe('16.1 devices: wipe only this account (older ones wipe the whole device)'),
});

const devices = (ctx: Ctx) => ctx.store.repo<EasDeviceFields>(EasDeviceModel);

async function view(ctx: Ctx, d: Device): Promise<DeviceView> {
  const cols = (await ctx.store
    .repo<EasCollectionFields>(EasCollectionModel)
    .list({ filter: { deviceUid: d.uid }, limit: 10_000 })) as Collection[];
  const folders = new Map(
    (await ctx.store.repo<Folder>(FolderModel).list({ filter: { mailboxUid: d.mailboxUid }, limit: 10_000 })).map((f) => [f.uid, f.name]),
  );
  return {
    uid: d.uid,
    version: d.version,
    userUid: d.userUid,
    mailboxUid: d.mailboxUid,
    deviceId: d.deviceId,
    deviceType: d.deviceType,
    userAgent: d.userAgent,
    protocolVersion: d.protocolVersion,
    provisioned: d.policyKey > 0,
    wipe: d.wipe,
    blocked: d.blocked,
    deviceInfo: d.deviceInfo,
    lastSyncAt: d.lastSyncAt,
    createdAt: d.createdAt,
    folders: cols.map((c) => ({
      folderUid: c.folderUid,
      folderName: folders.get(c.folderUid) ?? null,
      syncKey: c.syncKey,
      items: c.heldCount,
      filterType: c.filterType,
      complete: c.filled,
      lastSyncAt: c.updatedAt,
    })),
  } as unknown as DeviceView;
}

const trusted = (ctx: Ctx) => hasTrustedRole(ctx.principal, ctx.config);

/** A device the caller may see: any for a trusted role, else only the caller's own (404 otherwise). */
async function visible(ctx: Ctx, uid: string): Promise<Device> {
  const d = (await devices(ctx).get(uid)) as Device | null;
  if (!d || (!trusted(ctx) && d.userUid !== ctx.principal?.uid)) throw notFound('No such device');
  return d;
}

export async function listDevices(ctx: Ctx, q: { userUid?: string; mailboxUid?: string }): Promise<DeviceView[]> {
  const filter: Record<string, string> = trusted(ctx) ? {} : { userUid: ctx.principal!.uid };
  if (q.userUid && trusted(ctx)) filter.userUid = q.userUid;
  if (q.mailboxUid) filter.mailboxUid = q.mailboxUid;
  const rows = (await devices(ctx).list({ filter, sort: [{ field: 'lastSyncAt', dir: 'desc' }], limit: 10_000 })) as Device[];
  return Promise.all(rows.map((d) => view(ctx, d)));
}

export const getDevice = async (ctx: Ctx, uid: string) => view(ctx, await visible(ctx, uid));

/** Wipe at the device's next Provision (the plugin delivers it and records the acknowledgement). */
export async function remoteWipe(ctx: Ctx, uid: string, accountOnly: boolean): Promise<DeviceView> {
  requireTrusted(ctx.principal, ctx.config, { fresh: true });
  const d = await visible(ctx, uid);
  const wipe = accountOnly ? 'account-only' : 'requested';
  const after = (await devices(ctx).update(d.uid, { wipe }, { expectedVersion: d.version })) as Device;
  await writeAudit(ctx.store, ctx, {
    action: 'devices.remote-wipe',
    resource: 'devices',
    resourceUid: d.uid,
    before: { wipe: d.wipe },
    after: { wipe },
  });
  return view(ctx, after);
}

/** Lets a blocked or wiped device sync again: it provisions anew and starts every folder over. */
export async function unblock(ctx: Ctx, uid: string): Promise<DeviceView> {
  requireTrusted(ctx.principal, ctx.config, { fresh: true });
  const d = await visible(ctx, uid);
  const after = await ctx.store.transaction(async (tx) => {
    await dropCollections(tx.repo(EasCollectionModel), tx.repo(EasChunkModel), d.uid);
    return (await tx
      .repo<EasDeviceFields>(EasDeviceModel)
      .update(
        d.uid,
        { blocked: false, wipe: 'none', policyKey: 0, pendingPolicyKey: 0, folderSyncKey: 0, folders: {} },
        { expectedVersion: d.version },
      )) as Device;
  });
  await writeAudit(ctx.store, ctx, {
    action: 'devices.unblock',
    resource: 'devices',
    resourceUid: d.uid,
    before: { blocked: d.blocked, wipe: d.wipe },
    after: { blocked: false, wipe: 'none' },
  });
  return view(ctx, after);
}

/** Forgets a device and its sync state (its owner, or a trusted role with fresh elevation). */
export async function removeDevice(ctx: Ctx, uid: string): Promise<void> {
  const d = await visible(ctx, uid);
  if (d.userUid !== ctx.principal?.uid) requireTrusted(ctx.principal, ctx.config, { fresh: true });
  await ctx.store.transaction(async (tx) => {
    await dropCollections(tx.repo(EasCollectionModel), tx.repo(EasChunkModel), d.uid);
    await tx.repo(EasDeviceModel).delete(d.uid);
  });
  await writeAudit(ctx.store, ctx, { action: 'devices.delete', resource: 'devices', resourceUid: d.uid, before: { deviceId: d.deviceId } });
}

type RepoLike = {
  list(q: object): Promise<Array<{ uid: string }>>;
  delete(uid: string): Promise<boolean>;
  deleteMany(f: object): Promise<number>;
};
async function dropCollections(cols: RepoLike, chunks: RepoLike, deviceUid: string): Promise<void> {
  for (const c of await cols.list({ filter: { deviceUid }, limit: 10_000 })) {
    await chunks.deleteMany({ collectionUid: c.uid });
    await cols.delete(c.uid);
  }
}

export const inspection = z.object({
  device: deviceView,
  message: z
    .object({
      uid: z.string(),
      folderUid: z.string(),
      date: isoDate,
      folderSynced: z.boolean(),
      inFilterWindow: z.boolean(),
      heldByDevice: z.boolean(),
      heldChangeKey: z.string().nullable(),
      currentChangeKey: z.string(),
      verdict: z.string(),
    })
    .nullable(),
});

/**
 * Why did this device not get this message? The answer comes from the sync state and the message's
 * folder, date and version — never its content.
 */
export async function inspectDevice(ctx: Ctx, uid: string, messageUid?: string) {
  const d = await visible(ctx, uid);
  const device = await view(ctx, d);
  if (!messageUid) return { device, message: null };
  const m = (await ctx.store.repo<MessageRecord>(MessageModel).get(messageUid)) as MessageRecord | null;
  if (!m || m.mailboxUid !== d.mailboxUid) throw notFound('No such message in the device’s mailbox');
  const col = (await ctx.store
    .repo<EasCollectionFields>(EasCollectionModel)
    .findOne({ deviceUid: d.uid, folderUid: m.folderUid })) as Collection | null;
  let held: string | null = null;
  if (col)
    for (const c of await ctx.store
      .repo<{ items: Record<string, string> }>(EasChunkModel)
      .list({ filter: { collectionUid: col.uid }, limit: 10_000 }))
      if (Object.hasOwn(c.items, m.uid)) held = c.items[m.uid];
  const days = col ? FILTER_DAYS[col.filterType] : undefined;
  const inWindow = !days || m.date.getTime() >= Date.now() - days * 86_400_000;
  const verdict = !device.folders.length
    ? 'the device has never synced a folder'
    : !col
      ? 'the device does not sync the folder the message is in'
      : !inWindow
        ? `the message is older than the device's sync window (FilterType ${col.filterType}: ${days} days)`
        : held === null
          ? col.filled
            ? 'the message arrived after the device last synced this folder: it gets it at its next Sync'
            : 'the device is still fetching this folder (more items wait); the message is among them'
          : held !== String(m.version)
            ? 'the device holds an older state of the message; the change reaches it at its next Sync'
            : 'the device holds this message as it is now';
  return {
    device,
    message: {
      uid: m.uid,
      folderUid: m.folderUid,
      date: m.date,
      folderSynced: Boolean(col),
      inFilterWindow: inWindow,
      heldByDevice: held !== null,
      heldChangeKey: held,
      currentChangeKey: String(m.version),
      verdict,
    },
  };
}
