import type { Row } from '../api.js';
import type { BodyPreference } from './mail-item.js';
import type { Version } from './protocol.js';
import type { WbxmlElement } from './wbxml/index.js';

// What Sync, GetItemEstimate, Ping and ItemOperations need of a collection, whatever it holds: the
// items' change keys, the items themselves as ApplicationData, and the device's own Add, Change and
// Delete applied to the records. Mail folders, the mailbox's contacts and calendar, and its task
// lists are each a Source (sources.ts).

/** Sync Status values (MS-ASCMD 2.2.3.177.17). */
export const SYNC = {
  ok: 1,
  invalidKey: 3,
  protocolError: 4,
  serverError: 5,
  conversion: 6,
  conflict: 7,
  notFound: 8,
  hierarchyChanged: 12,
  incomplete: 13,
  badWait: 14,
  retry: 16,
} as const;

/** FilterType → how far back items reach (MS-ASCMD 2.2.3.68.2); 0 and unknown values: everything. */
const FILTER_DAYS: Record<number, number> = { 1: 1, 2: 3, 3: 7, 4: 14, 5: 31, 6: 92, 7: 183 };
export const sinceOf = (filterType: number) =>
  FILTER_DAYS[filterType] ? new Date(Date.now() - FILTER_DAYS[filterType] * 86_400_000) : null;
/** Tasks' FilterType 8: incomplete tasks only. */
export const INCOMPLETE_ONLY = 8;

/** How a device wants items written: its body preferences and MIME support, and the protocol version. */
export interface ItemContext {
  prefs: BodyPreference[];
  mimeSupport: number;
  version: Version;
}

/** Who wins when a device changes an item the server changed since the device last got it. */
export type ConflictPolicy = 'server' | 'client';

export interface Source {
  /** The collection id the device uses (a mail folder uid, or c-/k-/t- and a record uid). */
  readonly id: string;
  /** The item class (Ping and ItemOperations name it). */
  readonly className: 'Email' | 'Contacts' | 'Calendar' | 'Tasks';
  /** Where changes are announced (Ping): a channel and the entity types that matter; null: none (Ping polls). */
  readonly push: { channel: string; types?: string[] } | null;
  /** Every item in the device's window: id → change key. */
  keys(filterType: number): Promise<Map<string, string>>;
  /** The items of these ids that exist (any window). */
  rows(uids: string[]): Promise<Map<string, Row>>;
  /** An item's change key as keys() answers it; absent: its version. */
  keyOf?(row: Row): string;
  /** The first filling newest first below `before` (mail); absent: the first round compares like any other. */
  fillPage?(before: string | null, filterType: number, limit: number): Promise<Row[]>;
  /** An item as a Sync Add (and an ItemOperations Fetch) carries it. */
  toData(row: Row, x: ItemContext): Promise<WbxmlElement[]>;
  /** toData of a page of items at once (mail: their bodies read in one batch); absent: item by item. */
  toDataMany?(rows: Row[], x: ItemContext): Promise<WbxmlElement[][]>;
  /** An item as a Sync Change from the server carries it. */
  changeData(row: Row, x: ItemContext): Promise<WbxmlElement[]>;
  /** The device's Add: the new item's id and change key; null when this class is not created by devices. */
  add(data: WbxmlElement | undefined, x: ItemContext): Promise<{ uid: string; version: string } | null>;
  /**
   * The device's Change of an item it holds at `held` (its change key): the new change key, or
   * 'conflict' when the server's version stays (the next round sends it back as a Change).
   */
  change(
    id: string,
    data: WbxmlElement | undefined,
    held: string | undefined,
    policy: ConflictPolicy,
    x: ItemContext,
  ): Promise<string | 'conflict'>;
  /** The device's Delete; with an instance id (a calendar occurrence) the item stays: its new change key. */
  remove(id: string, opts: { deletesAsMoves: boolean; instanceId?: string }): Promise<string | null>;
}

/**
 * What differs between what a device holds and a collection now (item id → change key each):
 * items gone, items changed, items new — the new ones newest first (uids grow with time).
 */
export function heldDiff(held: Map<string, string>, now: Map<string, string>): { deletes: string[]; changes: string[]; adds: string[] } {
  return {
    deletes: [...held.keys()].filter((k) => !now.has(k)),
    changes: [...held.entries()].filter(([k, v]) => now.has(k) && now.get(k) !== v).map(([k]) => k),
    adds: [...now.keys()].filter((k) => !held.has(k)).reverse(),
  };
}

/** The ApplicationData of each of these items, in order. */
export async function dataOf(source: Source, rows: Row[], x: ItemContext): Promise<WbxmlElement[][]> {
  if (source.toDataMany) return source.toDataMany(rows, x);
  const out: WbxmlElement[][] = [];
  for (const row of rows) out.push(await source.toData(row, x));
  return out;
}

/** An item's change key (what the device holds once it got the item). */
export const changeKeyOf = (source: Source, row: Row): string => (source.keyOf ? source.keyOf(row) : String(row.version));
