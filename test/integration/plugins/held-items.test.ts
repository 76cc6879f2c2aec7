// What a mobile device holds of a collection (EasCollectionChunk rows, through the host's device
// state): a round writes only the chunks its changes touched, new items fill the last chunk, an
// emptied chunk goes, and a round saved over a collection another request moved on writes nothing
// (api-108) — on both SQL engines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../../lib/auth/index.js';
import { DEVICE_MODELS, EasChunkModel } from '../../../lib/plugins/device-models.js';
import { deviceStateApi } from '../../../lib/plugins/device-state.js';
import { CHUNK_ITEMS, HeldItems } from '../../../lib/plugins/held-items.js';
import type { DeviceStateApi, EasCollection } from '../../../lib/plugins/types.js';
import { openSqlStore, type Store } from '../../../lib/storage/index.js';
import { sqlBackends, type TestDatabase } from '../../helpers/databases.js';

const backends = await sqlBackends();

describe.each(backends.map((b) => [b.name, b] as const))('held items of a mobile-sync collection (%s)', (_name, backend) => {
  let db: TestDatabase;
  let store: Store;
  let api: DeviceStateApi;
  let state: EasCollection;
  const principal = { uid: 'user-held', roles: [] } as unknown as Principal;
  const chunkRows = async () =>
    (
      await store
        .repo<{ seq: number; items: Record<string, string> }>(EasChunkModel)
        .list({ filter: { collectionUid: state.uid }, limit: 100 })
    )
      .map((r) => ({ seq: r.seq, size: Object.keys(r.items).length, version: r.version }))
      .sort((a, b) => a.seq - b.seq);
  const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => `item-${String(from + i).padStart(6, '0')}`);

  beforeAll(async () => {
    db = await backend.open();
    store = await openSqlStore({ url: db.url, models: DEVICE_MODELS, synchronize: true });
    api = deviceStateApi(
      () => store,
      principal,
      async () => 'mailbox-held',
    );
    const device = await api.open('HELDDEVICE1', { deviceType: 'iPhone', userAgent: 'test', protocolVersion: '16.1' });
    state = await api.saveCollection(device.uid, 'folder-held', { syncKey: 1 });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('a round writes the chunks it touched only; new items fill the last chunk first', async () => {
    const first = new Map(ids(0, 2500).map((id) => [id, '1']));
    await api.setHeld(state, first);
    // Writing the held list moves the collection on (a list a process kept from before is not used).
    const moved = (await api.collection(state.deviceUid, 'folder-held'))!;
    expect(moved.version).toBe(state.version + 1);
    state = moved;
    const before = await chunkRows();
    expect(before.map((c) => c.size)).toEqual([CHUNK_ITEMS, CHUNK_ITEMS, 500]);

    const held = await api.held(state);
    expect(held).toBeInstanceOf(HeldItems);
    expect(new Map(held)).toEqual(first);
    held.set('item-001200', '2'); // a change in the second chunk
    held.set('item-000010', '1'); // the same key again: nothing to write
    for (const id of ids(2500, 600)) held.set(id, '1'); // 500 fill the third chunk, 100 start a fourth
    state = await api.saveRound(state, held, { syncKey: state.syncKey + 1, heldCount: held.size });

    const after = await chunkRows();
    expect(after.map((c) => [c.seq, c.size])).toEqual([
      [0, CHUNK_ITEMS],
      [1, CHUNK_ITEMS],
      [2, CHUNK_ITEMS],
      [3, 100],
    ]);
    expect(after[0].version).toBe(before[0].version);
    expect(after[1].version).toBe(before[1].version + 1);
    expect(after[2].version).toBe(before[2].version + 1);
    const again = await api.held(state);
    expect(again.size).toBe(3100);
    expect(again.get('item-001200')).toBe('2');
    expect(state).toMatchObject({ syncKey: 2, heldCount: 3100 });
  });

  it('an emptied chunk is removed, and a cleared list empties them all', async () => {
    const held = await api.held(state);
    for (const id of ids(3000, 100)) held.delete(id);
    held.delete('item-000000');
    state = await api.saveRound(state, held, { syncKey: state.syncKey + 1 });
    expect((await chunkRows()).map((c) => [c.seq, c.size])).toEqual([
      [0, CHUNK_ITEMS - 1],
      [1, CHUNK_ITEMS],
      [2, CHUNK_ITEMS],
    ]);
    const cleared = await api.held(state);
    cleared.clear();
    cleared.set('only', '7');
    state = await api.saveRound(state, cleared, { syncKey: state.syncKey + 1 });
    expect(await chunkRows()).toEqual([expect.objectContaining({ size: 1 })]);
    expect(Object.fromEntries(await api.held(state))).toEqual({ only: '7' });
  });

  it('a round over a collection another request moved on writes nothing and answers api-108', async () => {
    const stale = state;
    const a = await api.held(stale);
    const b = await api.held(stale);
    a.set('from-a', '1');
    b.set('from-b', '1');
    state = await api.saveRound(stale, a, { syncKey: stale.syncKey + 1 });
    await expect(api.saveRound(stale, b, { syncKey: stale.syncKey + 1 })).rejects.toMatchObject({ code: 'api-108' });
    const now = await api.held(state);
    expect([...now.keys()].sort()).toEqual(['from-a', 'only']);
    expect(state.syncKey).toBe(stale.syncKey + 1);
  });

  it('a held list kept between rounds is used only while the collection is the version its round saved', async () => {
    const h = await api.held(state);
    h.set('kept', '1');
    state = await api.saveRound(state, h, { syncKey: state.syncKey + 1 });
    // Another copy of the daemon writes a round: its chunk and the collection's version change.
    const chunkRepo = store.repo<{ collectionUid: string; seq: number; items: Record<string, string> }>(EasChunkModel);
    const [chunk] = await chunkRepo.list({ filter: { collectionUid: state.uid }, limit: 1 });
    await chunkRepo.update(chunk.uid, { items: { ...chunk.items, elsewhere: '1' } });
    const { EasCollectionModel } = await import('../../../lib/plugins/device-models.js');
    await store.repo<{ heldCount: number }>(EasCollectionModel).update(state.uid, { heldCount: 99 });
    state = (await api.collection(state.deviceUid, 'folder-held'))!;
    const read = await api.held(state);
    expect(read).not.toBe(h);
    expect(read.get('elsewhere')).toBe('1');
    expect(read.get('kept')).toBe('1');
    // This process's own round: its list is kept and handed to the next round without a read.
    read.set('next', '1');
    state = await api.saveRound(state, read, { syncKey: state.syncKey + 1 });
    expect(await api.held(state)).toBe(read);
  });

  it("another user's collection is not found", async () => {
    const other = deviceStateApi(
      () => store,
      { uid: 'someone-else', roles: [] } as unknown as Principal,
      async () => 'mailbox-other',
    );
    await expect(other.held(state)).rejects.toMatchObject({ status: 404 });
    await expect(other.saveRound(state, new Map(), { syncKey: 99 })).rejects.toMatchObject({ status: 404 });
    // Naming one's own device with another's collection does not reach it either.
    const own = await other.open('OTHERDEVICE1', { deviceType: 'iPhone', userAgent: 'test', protocolVersion: '16.1' });
    await expect(other.held({ uid: state.uid, deviceUid: own.uid })).rejects.toMatchObject({ status: 404 });
    await expect(other.setHeld({ uid: state.uid, deviceUid: own.uid }, new Map())).rejects.toMatchObject({ status: 404 });
    expect((await api.held(state)).size).toBeGreaterThan(0);
  });
});
