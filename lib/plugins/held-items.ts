import type { Repo } from '../storage/index.js';

/** Items per EasCollectionChunk row. */
export const CHUNK_ITEMS = 1000;

export interface ChunkFields {
  collectionUid: string;
  seq: number;
  items: Record<string, string>;
}

interface ChunkRow {
  uid: string;
  version: number;
}

/**
 * What a device holds of a collection (item id → change key) as read from its EasCollectionChunk
 * rows: a Map that remembers which chunk each item is in and which chunks its changes touched, so
 * that saving a round writes those chunks only. A first fill of 10 000 items used to rewrite every
 * chunk every round (each round's cost growing with what the device already held); new items now go
 * into the last chunk that has room.
 */
export class HeldItems extends Map<string, string> {
  readonly #members = new Map<number, Set<string>>();
  readonly #chunkOf = new Map<string, number>();
  readonly #dirty = new Set<number>();
  #rows = new Map<number, ChunkRow>();
  #last = 0;
  #loaded = false;

  constructor(readonly collectionUid: string) {
    super();
  }

  /** Fills the map from the stored rows (in seq order); nothing is dirty afterwards. */
  static of(collectionUid: string, rows: Array<ChunkRow & ChunkFields>): HeldItems {
    const held = new HeldItems(collectionUid);
    for (const r of rows) {
      held.#rows.set(r.seq, { uid: r.uid, version: r.version });
      const members = held.#chunk(r.seq);
      for (const [k, v] of Object.entries(r.items)) {
        members.add(k);
        held.#chunkOf.set(k, r.seq);
        Map.prototype.set.call(held, k, v);
      }
    }
    held.#loaded = true;
    return held;
  }

  override set(key: string, value: string): this {
    if (!this.#loaded) return super.set(key, value);
    if (super.get(key) === value) return this;
    let seq = this.#chunkOf.get(key);
    if (seq === undefined) {
      seq = this.#tail();
      this.#chunk(seq).add(key);
      this.#chunkOf.set(key, seq);
    }
    this.#dirty.add(seq);
    return super.set(key, value);
  }

  override delete(key: string): boolean {
    const seq = this.#chunkOf.get(key);
    if (seq !== undefined) {
      this.#dirty.add(seq);
      this.#chunkOf.delete(key);
      this.#members.get(seq)!.delete(key);
    }
    return super.delete(key);
  }

  override clear(): void {
    for (const seq of this.#members.keys()) this.#dirty.add(seq);
    for (const m of this.#members.values()) m.clear();
    this.#chunkOf.clear();
    super.clear();
  }

  /** Writes the chunks this map's changes touched (version-checked: a concurrent writer makes it fail with api-108). */
  async save(repo: Repo<ChunkFields>): Promise<void> {
    for (const seq of [...this.#dirty].sort((a, b) => a - b)) {
      const members = this.#members.get(seq)!;
      const items = Object.fromEntries([...members].map((k) => [k, super.get(k)!]));
      const row = this.#rows.get(seq);
      if (row && !members.size) {
        await repo.delete(row.uid, { expectedVersion: row.version });
        this.#rows.delete(seq);
      } else if (row) {
        const next = await repo.update(row.uid, { items }, { expectedVersion: row.version });
        this.#rows.set(seq, { uid: next.uid, version: next.version });
      } else if (members.size) {
        const made = await repo.create({ collectionUid: this.collectionUid, seq, items });
        this.#rows.set(seq, { uid: made.uid, version: made.version });
      }
    }
    this.#dirty.clear();
  }

  /** The chunk a new item goes into: the last one while it has room. */
  #tail(): number {
    return (this.#members.get(this.#last)?.size ?? 0) < CHUNK_ITEMS ? this.#last : this.#last + 1;
  }

  #chunk(seq: number): Set<string> {
    let m = this.#members.get(seq);
    if (!m) this.#members.set(seq, (m = new Set()));
    this.#last = Math.max(this.#last, seq);
    return m;
  }
}

/**
 * Items a process keeps of held lists between rounds, all collections together: some 150 bytes
 * each, so about 30 MiB at most, whatever the number of devices and the size of their folders.
 */
const KEPT_ITEMS = 200_000;

/**
 * Held lists kept between a collection's rounds (in this process), each with the collection's
 * version it belongs to: a first fill reads a list that grows by a window every round, which was
 * read and parsed whole every round. A list is handed out once (the round changes it in place) and
 * kept again only by the round that saved it; any other write of the collection raises its version,
 * so a list kept by one copy of the daemon is not used after another copy wrote. The least recently
 * kept lists go first once the items kept pass `maxItems`.
 */
export class HeldCache {
  readonly #kept = new Map<string, { version: number; held: HeldItems }>();
  #items = 0;

  constructor(private readonly maxItems = KEPT_ITEMS) {}

  /** The list kept for this version of the collection, taken out of the cache; undefined when none. */
  take(collectionUid: string, version: number | undefined): HeldItems | undefined {
    const hit = this.#kept.get(collectionUid);
    this.forget(collectionUid);
    return hit && hit.version === version ? hit.held : undefined;
  }

  keep(collectionUid: string, version: number, held: Map<string, string>): void {
    if (!(held instanceof HeldItems) || held.collectionUid !== collectionUid || held.size > this.maxItems) return;
    this.forget(collectionUid);
    this.#kept.set(collectionUid, { version, held });
    this.#items += held.size;
    for (const oldest of this.#kept.keys()) {
      if (this.#items <= this.maxItems) break;
      this.forget(oldest);
    }
  }

  forget(collectionUid: string): void {
    const had = this.#kept.get(collectionUid);
    if (!had) return;
    this.#items -= had.held.size;
    this.#kept.delete(collectionUid);
  }

  /** Collections and items kept now (diagnostics and tests). */
  get size(): { collections: number; items: number } {
    return { collections: this.#kept.size, items: this.#items };
  }
}
