// Value indexes (ModelDef.valueIndexes): list fields made queryable through the Store port, kept in
// step with every write, on every adapter.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineModel, type Repo, type Store } from '../../../lib/storage/index.js';
import { openStoreOf, type TestDatabase } from '../../helpers/databases.js';
import { contractBackends } from './_contract.js';

const fields = {
  box: z.string(),
  name: z.string(),
  to: z.array(z.object({ address: z.string() })).default([]),
  tags: z.array(z.string()).default([]),
  at: z.number().int(),
};
const plain = { name: 'vi_item', table: 'vi_items', fields };
const Item = defineModel({
  ...plain,
  valueIndexes: [
    { name: 'recipients', from: ['to'], scope: 'box', values: (r) => (r.to as Array<{ address: string }>).map((a) => a.address) },
    { name: 'tags', from: ['tags'], scope: 'box', values: (r) => r.tags as string[] },
    { name: 'words', from: ['name'], values: (r) => String(r.name).toLowerCase().split(/\s+/) },
  ],
});
type ItemT = z.infer<z.ZodObject<typeof fields>>;

const backends = await contractBackends();

describe.each(backends)('value indexes on $name', (backend) => {
  let db: TestDatabase;
  let store: Store;
  let items: Repo<ItemT>;
  const names = async (filter: Record<string, unknown>) =>
    (await items.list({ filter: filter as never, sort: [{ field: 'at', dir: 'asc' }] })).map((r) => r.name);

  beforeAll(async () => {
    db = await backend.open();
    // Rows written before the model declared value indexes (an upgrade): the first open with them fills the side table.
    const before = await openStoreOf(backend, db.url, [defineModel(plain)]);
    await before
      .repo<ItemT>(defineModel(plain))
      .create({ box: 'b1', name: 'Old Timer', to: [{ address: 'old@x.test' }], tags: ['archive'], at: 0 });
    await before.close();
    store = await openStoreOf(backend, db.url, [Item]);
    items = store.repo<ItemT>(Item);
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('indexes records written before the declaration, once, on the first open', async () => {
    expect(await names({ tags: { $has: 'archive' } })).toEqual(['Old Timer']);
    expect(await names({ words: { $prefix: 'tim' } })).toEqual(['Old Timer']);
  });

  it('finds records by one of their values ($has) and by prefix, narrowed by scope and other fields', async () => {
    await items.create({
      box: 'b1',
      name: 'Alpha one',
      to: [{ address: 'ann@x.test' }, { address: 'bob@x.test' }],
      tags: ['red', 'blue'],
      at: 1,
    });
    await items.create({ box: 'b1', name: 'Beta two', to: [{ address: 'bob@x.test' }], tags: ['blue'], at: 2 });
    await items.create({ box: 'b2', name: 'Gamma three', to: [{ address: 'ann@x.test' }], tags: ['red'], at: 3 });
    expect(await names({ box: 'b1', recipients: { $has: 'ann@x.test' } })).toEqual(['Alpha one']);
    expect(await names({ recipients: { $has: 'ann@x.test' } })).toEqual(['Alpha one', 'Gamma three']);
    expect(await names({ box: 'b1', tags: { $has: 'blue' }, at: { $gt: 1 } })).toEqual(['Beta two']);
    expect(await names({ box: 'b1', tags: { $has: 'blue' }, recipients: { $has: 'ann@x.test' } })).toEqual(['Alpha one']);
    expect(await names({ words: { $prefix: 'tw' } })).toEqual(['Beta two']);
    expect(await names({ words: { $prefix: 'zzz' } })).toEqual([]);
    expect(await items.count({ box: 'b1', tags: { $has: 'blue' } })).toBe(2);
    expect(await items.findOne({ tags: { $has: 'red' }, box: 'b2' })).toMatchObject({ name: 'Gamma three' });
    // A value index is not a column: other operators and sorting on it are refused.
    await expect(items.list({ filter: { tags: 'red' } })).rejects.toMatchObject({ code: 'api-106' });
    await expect(items.list({ filter: { name: { $has: 'x' } } })).rejects.toMatchObject({ code: 'api-106' });
  });

  it('a record and its values are written together or not at all: a duplicate uid writes no values, in or out of a transaction', async () => {
    const first = await items.create({
      uid: '00000000-0000-7000-8000-0000000000d1',
      box: 'b9',
      name: 'Unique one',
      to: [{ address: 'dup@x.test' }],
      tags: ['solo'],
      at: 90,
    } as never);
    expect(await names({ box: 'b9', tags: { $has: 'solo' } })).toEqual(['Unique one']);
    await expect(
      items.create({ uid: first.uid, box: 'b9', name: 'Impostor', to: [{ address: 'other@x.test' }], tags: ['fake'], at: 91 } as never),
    ).rejects.toMatchObject({ code: 'api-112' });
    const after = await store.transaction(async (tx) => {
      const repo = tx.repo<ItemT>(Item);
      await expect(
        repo.create({ uid: first.uid, box: 'b9', name: 'Impostor two', to: [], tags: ['fake'], at: 92 } as never),
      ).rejects.toMatchObject({ code: 'api-112' });
      return repo.create({ box: 'b9', name: 'Unique two', to: [{ address: 'dup@x.test' }], tags: ['solo'], at: 93 }); // the transaction goes on
    });
    expect(await names({ box: 'b9', tags: { $has: 'fake' } })).toEqual([]);
    expect(await names({ recipients: { $has: 'other@x.test' } })).toEqual([]);
    expect(await names({ box: 'b9', recipients: { $has: 'dup@x.test' } })).toEqual(['Unique one', 'Unique two']);
    expect(await items.get(after.uid)).toMatchObject({ name: 'Unique two' });
    // no values at all: the record alone
    const bare = await items.create({ box: 'b9', name: '', to: [], tags: [], at: 94 });
    expect(await items.get(bare.uid)).toMatchObject({ at: 94 });
  });

  it("createMany writes each record's values with it, and none when the batch is refused", async () => {
    const made = await items.createMany([
      { box: 'b10', name: 'Many one', to: [{ address: 'm1@x.test' }, { address: 'm2@x.test' }], tags: ['batch'], at: 100 },
      { box: 'b10', name: 'Many two', to: [], tags: ['batch', 'second'], at: 101 },
      { box: 'b10', name: 'Many thirdly', to: [{ address: 'm2@x.test' }], tags: [], at: 102 },
    ]);
    expect(await names({ box: 'b10', tags: { $has: 'batch' } })).toEqual(['Many one', 'Many two']);
    expect(await names({ box: 'b10', recipients: { $has: 'm2@x.test' } })).toEqual(['Many one', 'Many thirdly']);
    expect(await names({ words: { $has: 'thirdly' } })).toEqual(['Many thirdly']);
    // A clash with a record there (its uid): the whole batch goes, its values with it.
    await expect(
      items.createMany([
        { box: 'b10', name: 'Refused one', to: [{ address: 'refused@x.test' }], tags: ['refused'], at: 103 },
        { uid: made[0].uid, box: 'b10', name: 'Refused two', to: [], tags: ['refused'], at: 104 } as never,
      ]),
    ).rejects.toMatchObject({ code: 'api-112' });
    await expect(
      store.transaction((tx) =>
        tx
          .repo<ItemT>(Item)
          .createMany([
            { box: 'b10', name: 'Refused three', to: [{ address: 'refused@x.test' }], tags: ['refused'], at: 105 },
            { uid: made[1].uid, box: 'b10', name: 'Refused four', to: [], tags: [], at: 106 } as never,
          ]),
      ),
    ).rejects.toMatchObject({ code: 'api-112' });
    expect(await names({ tags: { $has: 'refused' } })).toEqual([]);
    expect(await names({ recipients: { $has: 'refused@x.test' } })).toEqual([]);
    expect(await names({ words: { $has: 'refused' } })).toEqual([]);
  });

  it('follows update, updateMany, delete, deleteMany and a rolled-back transaction', async () => {
    const a = await items.create({ box: 'b3', name: 'Delta', to: [], tags: ['one'], at: 10 });
    const b = await items.create({ box: 'b3', name: 'Epsilon', to: [], tags: ['one'], at: 11 });
    await items.update(a.uid, { tags: ['two'] });
    expect(await names({ box: 'b3', tags: { $has: 'one' } })).toEqual(['Epsilon']);
    expect(await names({ box: 'b3', tags: { $has: 'two' } })).toEqual(['Delta']);
    expect(await items.updateMany({ box: 'b3', tags: { $has: 'one' } }, { tags: ['three', 'two'] })).toBe(1);
    expect(await names({ box: 'b3', tags: { $has: 'two' } })).toEqual(['Delta', 'Epsilon']);
    expect(await names({ box: 'b3', tags: { $has: 'one' } })).toEqual([]);
    await items.update(b.uid, { name: 'Zeta' });
    expect(await names({ words: { $prefix: 'eps' } })).toEqual([]);
    expect(await names({ words: { $has: 'zeta' } })).toEqual(['Zeta']);
    await expect(
      store.transaction(async (tx) => {
        await tx.repo<ItemT>(Item).update(a.uid, { tags: ['rolled-back'] });
        await tx.repo<ItemT>(Item).create({ box: 'b3', name: 'Ghost', to: [], tags: ['rolled-back'], at: 12 });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await names({ tags: { $has: 'rolled-back' } })).toEqual([]);
    expect(await names({ box: 'b3', tags: { $has: 'two' } })).toEqual(['Delta', 'Zeta']);
    expect(await items.delete(a.uid)).toBe(true);
    expect(await names({ box: 'b3', tags: { $has: 'two' } })).toEqual(['Zeta']);
    expect(await items.deleteMany({ box: 'b3', tags: { $has: 'three' } })).toBe(1);
    expect(await items.count({ box: 'b3' })).toBe(0);
    // Nothing is left behind in the side table for deleted records (SQL: the document backend keeps values in the record).
    if (store.kind === 'document') return;
    const left = await (store as unknown as { ctx: { ds: { query(sql: string): Promise<Array<{ n: string | number }>> } } }).ctx.ds.query(
      `SELECT COUNT(*) AS n FROM "vi_items_terms" WHERE uid IN ('${a.uid}', '${b.uid}')`,
    );
    expect(Number(left[0].n)).toBe(0);
  });

  it('keeps values exact under concurrent updates of one record', async () => {
    const r = await items.create({ box: 'b4', name: 'Busy', to: [], tags: [], at: 20 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => items.update(r.uid, { tags: [`t${i}`] })));
    const final = (await items.get(r.uid))!.tags[0];
    for (let i = 0; i < 20; i++) expect(await items.count({ box: 'b4', tags: { $has: `t${i}` } })).toBe(`t${i}` === final ? 1 : 0);
  });

  it('answers the same whether a value matches none, a few or more records than are looked up one by one', async () => {
    // SQLite picks its plan from a bounded count of the matches (lib/storage/sql/value-index.ts DRIVE_MAX): cover each.
    await store.transaction(async (tx) => {
      const repo = tx.repo<ItemT>(Item);
      for (let i = 0; i < 700; i++)
        await repo.create({
          box: 'b5',
          name: `n${i}`,
          to: [{ address: i % 100 === 0 ? 'few@x.test' : 'many@x.test' }],
          tags: [],
          at: 1000 + i,
        });
    });
    const page = async (address: string, offset: number) =>
      (
        await items.list({
          filter: { box: 'b5', recipients: { $has: address }, at: { $gte: 1000 } },
          sort: [{ field: 'at', dir: 'desc' }],
          limit: 3,
          offset,
        })
      ).map((r) => r.name);
    expect(await page('many@x.test', 0)).toEqual(['n699', 'n698', 'n697']);
    expect(await page('many@x.test', 690)).toEqual(['n3', 'n2', 'n1']);
    expect(await page('few@x.test', 0)).toEqual(['n600', 'n500', 'n400']);
    expect(await page('few@x.test', 6)).toEqual(['n0']);
    expect(await page('none@x.test', 0)).toEqual([]);
    expect(await items.count({ box: 'b5', recipients: { $has: 'many@x.test' } })).toBe(693);
    expect(await items.count({ box: 'b5', recipients: { $has: 'few@x.test' }, at: { $lt: 1300 } })).toBe(3);
  });
});
