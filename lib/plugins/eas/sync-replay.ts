import type { Row } from '../api.js';
import { textOf } from './protocol.js';
import type { Round } from './sync-round.js';
import { dataOf, type ItemContext, type Source } from './sync-source.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// The previous round of a collection, kept so that a device that lost an answer and sends its key
// again gets that round again (MS-ASCMD 2.2.3.166.4). What is kept is the round's outline — its
// key, MoreAvailable, the answers to the device's own commands, and which item each command named —
// not the items themselves: a first fill's round holds a window of whole messages (some 300 KB
// for 100), which every read of the collection's state would otherwise carry. Sent again, the items
// are written as they are now; an item gone meanwhile is left out, and the next round's comparison
// tells the device.

const as = ns('AirSync');

interface Outline {
  key: number;
  more: boolean;
  responses: WbxmlElement[];
  commands: Array<[tag: string, id: string]>;
}

/** What is stored of a round (EasCollectionState.previousAnswer). */
export function outlineOf(key: number, round: Round): string {
  const outline: Outline = {
    key,
    more: round.more,
    responses: round.responses,
    commands: round.commands.map((c) => [c.tag, textOf(c, 'ServerId') ?? '']),
  };
  return JSON.stringify(outline, replace);
}

/**
 * The saved round again, its items as they are now: the key it answered and its commands; null when
 * what is saved is not an outline (the device is then told its key is stale and starts over).
 */
export async function replay(saved: string, source: Source, x: ItemContext): Promise<{ key: number; round: Round } | null> {
  const outline = JSON.parse(saved, revive) as Partial<Outline>;
  if (!isOutline(outline)) return null;
  const rows = await source.rows(outline.commands.filter(([tag]) => tag !== 'Delete').map(([, id]) => id));
  const added = outline.commands.filter(([tag, id]) => tag === 'Add' && rows.has(id)).map(([, id]) => rows.get(id)!);
  const data = new Map<string, WbxmlElement[]>();
  (await dataOf(source, added, x)).forEach((d, i) => data.set(String(added[i].uid), d));
  const commands: WbxmlElement[] = [];
  for (const [tag, id] of outline.commands) {
    const row: Row | undefined = rows.get(id);
    if (tag === 'Delete') commands.push(as('Delete', [as('ServerId', id)]));
    else if (tag === 'Add' && data.has(id)) commands.push(as('Add', [as('ServerId', id), as('ApplicationData', data.get(id)!)]));
    else if (tag === 'Change' && row)
      commands.push(as('Change', [as('ServerId', id), as('ApplicationData', await source.changeData(row, x))]));
  }
  return { key: outline.key, round: { commands, responses: outline.responses, more: outline.more } };
}

function isOutline(o: Partial<Outline>): o is Outline {
  return typeof o.key === 'number' && Array.isArray(o.commands) && Array.isArray(o.responses);
}

/** Saved answers keep opaque data (MIME) as base64. */
function replace(this: unknown, k: string, v: unknown): unknown {
  if (k === 'opaque' && v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer')
    return { base64: Buffer.from((v as { data: number[] }).data).toString('base64') };
  return v;
}
function revive(k: string, v: unknown): unknown {
  return k === 'opaque' && v && typeof v === 'object' && 'base64' in v
    ? Buffer.from(String((v as { base64: string }).base64), 'base64')
    : v;
}
