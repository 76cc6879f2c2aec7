import { notFound } from '../errors/index.js';
import type { Principal } from '../auth/index.js';
import type { Store } from '../storage/index.js';
import { EasChunkModel, EasCollectionModel, EasDeviceModel, type EasCollectionFields, type EasDeviceFields } from './device-models.js';
import type { CollectionRef, DeviceStateApi, EasCollection, EasDevice } from './types.js';
import { CHUNK_ITEMS, HeldCache, HeldItems, type ChunkFields } from './held-items.js';

const heldCache = new HeldCache();

/**
 * Writes what a device holds of a collection: only the chunks a HeldItems read of it changed, or,
 * given any other map, every chunk anew.
 */
async function writeHeld(tx: Store, collectionUid: string, held: Map<string, string>): Promise<void> {
  const repo = tx.repo<ChunkFields>(EasChunkModel);
  if (held instanceof HeldItems && held.collectionUid === collectionUid) return held.save(repo);
  await repo.deleteMany({ collectionUid });
  const entries = [...held.entries()];
  const rows = [];
  for (let i = 0; i < entries.length; i += CHUNK_ITEMS)
    rows.push({ collectionUid, seq: i / CHUNK_ITEMS, items: Object.fromEntries(entries.slice(i, i + CHUNK_ITEMS)) });
  if (rows.length) await repo.createMany(rows);
}

/**
 * The mobile-sync records of one signed-in user (Spec: Stored state of the mobile-sync plugin).
 * Every device belongs to the user who first synced it: another user's device, and the
 * collections under it, are invisible (404) whatever roles the caller holds.
 */
export function deviceStateApi(storeOf: () => Store, principal: Principal, ownMailbox: () => Promise<string>): DeviceStateApi {
  const devices = () => storeOf().repo<EasDeviceFields>(EasDeviceModel);
  const collections = () => storeOf().repo<EasCollectionFields>(EasCollectionModel);
  const chunks = () => storeOf().repo<ChunkFields>(EasChunkModel);

  async function mine(uid: string): Promise<EasDevice> {
    const d = await devices().get(uid);
    if (!d || d.userUid !== principal.uid) throw notFound('No such device');
    owned.add(uid);
    return d as EasDevice;
  }

  // Devices and collections already found to be the caller's in this request (ownership does not
  // change): a Sync round names its device and collection in four calls.
  const owned = new Set<string>();
  async function ownDevice(uid: string): Promise<void> {
    if (!owned.has(uid)) await mine(uid);
  }

  /** The collection is one of the caller's devices' (counted: its row is not needed). */
  async function ownCollection(c: CollectionRef): Promise<void> {
    const key = `${c.deviceUid}/${c.uid}`;
    if (owned.has(key)) return;
    await ownDevice(c.deviceUid);
    if ((await collections().count({ uid: c.uid, deviceUid: c.deviceUid })) !== 1) throw notFound('No such collection');
    owned.add(key);
  }

  return {
    async open(deviceId, init) {
      const found = await devices().findOne({ userUid: principal.uid, deviceId });
      if (found) {
        owned.add(found.uid);
        return found as EasDevice;
      }
      const mailboxUid = await ownMailbox();
      try {
        return (await devices().create({ userUid: principal.uid, mailboxUid, deviceId, ...init } as never)) as EasDevice;
      } catch (e) {
        // Two first requests of one device at once: the other one created it.
        const again = await devices().findOne({ userUid: principal.uid, deviceId });
        if (again) return again as EasDevice;
        throw e;
      }
    },
    async update(uid, patch) {
      const d = await mine(uid);
      return (await devices().update(d.uid, patch as never, { expectedVersion: d.version })) as EasDevice;
    },
    async collection(deviceUid, folderUid) {
      await ownDevice(deviceUid);
      const c = (await collections().findOne({ deviceUid, folderUid })) as EasCollection | null;
      if (c) owned.add(`${deviceUid}/${c.uid}`);
      return c;
    },
    async saveCollection(deviceUid, folderUid, patch) {
      await ownDevice(deviceUid);
      const found = await collections().findOne({ deviceUid, folderUid });
      if (found) return (await collections().update(found.uid, patch as never, { expectedVersion: found.version })) as EasCollection;
      return (await collections().create({ deviceUid, folderUid, ...patch } as never)) as EasCollection;
    },
    async held(collection) {
      await ownCollection(collection);
      const kept = heldCache.take(collection.uid, collection.version);
      if (kept) return kept;
      const collectionUid = collection.uid;
      return HeldItems.of(
        collectionUid,
        await chunks().list({ filter: { collectionUid }, sort: [{ field: 'seq', dir: 'asc' }], limit: 100_000 }),
      );
    },
    async setHeld(collection, held) {
      await ownCollection(collection);
      heldCache.forget(collection.uid);
      // The collection's version moves too, so no process uses a held list it kept from before.
      await storeOf().transaction(async (tx) => {
        await writeHeld(tx, collection.uid, held);
        const c = await tx.repo<EasCollectionFields>(EasCollectionModel).get(collection.uid);
        if (c)
          await tx.repo<EasCollectionFields>(EasCollectionModel).update(c.uid, { heldCount: held.size }, { expectedVersion: c.version });
      });
    },
    async saveRound(state, held, patch) {
      await ownCollection(state);
      heldCache.forget(state.uid);
      const saved = await storeOf().transaction(async (tx) => {
        await writeHeld(tx, state.uid, held);
        return (await tx.repo<EasCollectionFields>(EasCollectionModel).update(state.uid, patch as never, {
          expectedVersion: state.version,
        })) as EasCollection;
      });
      heldCache.keep(saved.uid, saved.version, held);
      return saved;
    },
    async drop(deviceUid, folderUid) {
      await mine(deviceUid);
      const gone = await collections().list({ filter: { deviceUid, ...(folderUid ? { folderUid } : {}) }, limit: 10_000 });
      for (const c of gone) heldCache.forget(c.uid);
      await storeOf().transaction(async (tx) => {
        for (const c of gone) {
          await tx.repo(EasChunkModel).deleteMany({ collectionUid: c.uid });
          await tx.repo(EasCollectionModel).delete(c.uid);
        }
      });
    },
  };
}
