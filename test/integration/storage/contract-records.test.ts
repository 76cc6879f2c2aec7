// The Store contract, single records: create, read back, update and delete by version, big
// integers: run unchanged against every adapter (SQLite, PostgreSQL).
import { describe, expect, it } from 'vitest';
import { contractStore, Value, VALUE_CASES, type ValueT } from './_contract.js';
import { contractBackends } from './_contract.js';

const backends = await contractBackends();

describe.each(backends)('Store contract (records) on $name', (backend) => {
  const f = contractStore(backend);

  it('creates records with a sortable server uid, version 1 and timestamps', async () => {
    const a = await f.things.create({ name: 'a', owner: 'o1', size: 3, flagged: false, tags: ['x', 'y'] });
    const b = await f.things.create({ name: 'b', owner: 'o1', size: 1, flagged: true, tags: [] });
    expect(a.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.uid < b.uid).toBe(true);
    expect(a.version).toBe(1);
    const got = await f.things.get(a.uid);
    expect(got).toMatchObject({ name: 'a', owner: 'o1', size: 3, flagged: false, tags: ['x', 'y'], version: 1 });
    expect(got!.createdAt).toBeInstanceOf(Date);
    expect(await f.things.get('00000000-0000-7000-8000-000000000000')).toBeNull();
  });

  it('reads every kind of value back exactly as written (list, get and a write that returns the record)', async () => {
    const values = f.store.repo<ValueT>(Value);
    const cases = VALUE_CASES;
    const made = [];
    for (const [i, c] of cases.entries()) made.push(await values.create({ key: `k${i}`, ...c }));
    const listed = await values.list({ sort: [{ field: 'key', dir: 'asc' }] });
    expect(listed.map(({ key, text, big, real, on, meta, at }) => ({ key, text, big, real, on, meta, at }))).toEqual(
      cases.map((c, i) => ({ key: `k${i}`, ...c })),
    );
    for (const [i, c] of cases.entries()) {
      const got = await values.get(made[i].uid);
      expect(got).toMatchObject({ ...c, version: 1 });
      expect(JSON.stringify(got!.at)).toBe(JSON.stringify(c.at));
      expect(JSON.stringify(got!.createdAt)).toBe(JSON.stringify(made[i].createdAt));
    }
    const updated = await values.update(made[0].uid, { real: 2.5 }, { expectedVersion: 1 });
    expect(updated).toMatchObject({ ...cases[0], real: 2.5, version: 2 });
  });

  it('refuses a duplicate unique value with api-112', async () => {
    await expect(f.things.create({ name: 'a', owner: 'o2', size: 9, flagged: false, tags: [] })).rejects.toMatchObject({ code: 'api-112' });
  });

  it('updates conditionally on version: stale answers api-108, absent api-107', async () => {
    const t = await f.things.create({ name: 'v', owner: 'o5', size: 1, flagged: false, tags: [] });
    const u = await f.things.update(t.uid, { size: 2 }, { expectedVersion: 1 });
    expect(u.version).toBe(2);
    expect(u.size).toBe(2);
    expect(u.updatedAt.getTime()).toBeGreaterThanOrEqual(t.updatedAt.getTime());
    await expect(f.things.update(t.uid, { size: 3 }, { expectedVersion: 1 })).rejects.toMatchObject({ code: 'api-108', status: 409 });
    expect((await f.things.get(t.uid))!.size).toBe(2);
    await expect(f.things.update('00000000-0000-7000-8000-000000000000', { size: 3 })).rejects.toMatchObject({ code: 'api-107' });
    const unconditional = await f.things.update(t.uid, { tags: ['z'] });
    expect(unconditional).toMatchObject({ version: 3, tags: ['z'] });
  });

  it('deletes conditionally on version', async () => {
    const t = await f.things.create({ name: 'd', owner: 'o6', size: 1, flagged: false, tags: [] });
    await expect(f.things.delete(t.uid, { expectedVersion: 7 })).rejects.toMatchObject({ code: 'api-108' });
    expect(await f.things.delete(t.uid, { expectedVersion: 1 })).toBe(true);
    expect(await f.things.get(t.uid)).toBeNull();
    expect(await f.things.delete(t.uid)).toBe(false);
  });

  it('updates and deletes in bulk, bumping versions', async () => {
    for (let i = 0; i < 4; i++) await f.things.create({ name: `bulk${i}`, owner: 'o7', size: i, flagged: false, tags: [] });
    expect(await f.things.updateMany({ owner: 'o7', size: { $lt: 2 } }, { flagged: true })).toBe(2);
    const flagged = await f.things.list({ filter: { owner: 'o7', flagged: true } });
    expect(flagged.every((t) => t.version === 2)).toBe(true);
    expect(await f.things.deleteMany({ owner: 'o7' })).toBe(4);
    expect(await f.things.count({ owner: 'o7' })).toBe(0);
  });

  it('holds integers past 2^31 (quotas and sizes in bytes)', async () => {
    const big = 5 * 1024 ** 3;
    const t = await f.things.create({ name: 'big', owner: 'o10', size: big, flagged: false, tags: [] });
    expect((await f.things.get(t.uid))!.size).toBe(big);
    expect((await f.things.increment(t.uid, { size: big }))!.size).toBe(2 * big);
    expect((await f.things.list({ filter: { owner: 'o10', size: { $gt: 2 ** 32 } } })).map((r) => r.name)).toEqual(['big']);
  });

  it('answers ping while open', async () => {
    await expect(f.store.ping()).resolves.toBeUndefined();
  });
});
