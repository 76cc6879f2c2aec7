import type { RecordsApi, Row } from '../api.js';
import { atLeast, kid, kids, textOf } from './protocol.js';
import { compact, parseDate } from './sync-pim.js';
import type { ItemContext } from './sync-source.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// Modified occurrences. On the server an occurrence changed on its own (an organizer's update of one
// meeting of a series, an imported RECURRENCE-ID) is a record of its own with the series' icalUid
// and its recurrenceId; a device knows it only as an Exception of the series (MS-ASCAL): sent as
// an event of its own it would show twice, beside the series' occurrence it replaces. So a series
// carries its modified occurrences (OVERRIDES), they are not items of the collection, and the
// series' change key names their versions too, so a change of one reaches the device as a Change
// of the series. An occurrence whose series is not in the mailbox stays an event of its own. A
// device's modified Exception becomes (or changes) such a record.

const ca = ns('Calendar');
const asb = ns('AirSyncBase');

/** A series' modified occurrences, on the series' row as the calendar source hands it out. */
export const OVERRIDES = Symbol('overrides');

type Series = Row & { [OVERRIDES]?: Row[] };

const ridOf = (row: Row) => (row.recurrenceId ? new Date(row.recurrenceId as string).getTime() : null);

/** The collection's items: series with their modified occurrences, and every other event. */
export function arrangeOverrides(rows: Row[]): Row[] {
  const series = new Map<string, Series>();
  for (const row of rows) if (ridOf(row) === null && row.rrule && row.icalUid) series.set(String(row.icalUid), { ...row, [OVERRIDES]: [] });
  const out: Row[] = [];
  for (const row of rows) {
    const master = row.icalUid ? series.get(String(row.icalUid)) : undefined;
    if (master && ridOf(row) !== null) master[OVERRIDES]!.push(row);
    else out.push(master && master.uid === row.uid ? master : row);
  }
  return out;
}

/** A series' modified occurrences as arranged (none for any other item). */
export const overridesOf = (row: Row | undefined): Row[] => (row as Series | undefined)?.[OVERRIDES] ?? [];

/** An item's change key: its version, and its modified occurrences' (`5+<uid>:2,…`). */
export function eventKey(row: Row): string {
  const overrides = (row as Series)[OVERRIDES] ?? [];
  if (!overrides.length) return String(row.version);
  const parts = overrides.map((o) => `${String(o.uid)}:${String(o.version)}`).sort();
  return `${String(row.version)}+${parts.join(',')}`;
}

/** The Exceptions of a series' modified occurrences: a cancelled one is deleted, others say what differs. */
export function overrideExceptions(row: Row, x: ItemContext): WbxmlElement[] {
  const v16 = atLeast(x.version, '16.0');
  return ((row as Series)[OVERRIDES] ?? []).map((o) => {
    const when = v16 ? asb('InstanceId', compact(o.recurrenceId)) : ca('ExceptionStartTime', compact(o.recurrenceId));
    if (o.status === 'cancelled') return ca('Exception', [ca('Deleted', '1'), when]);
    const location = String(o.location ?? '');
    return ca('Exception', [
      when,
      ca('Subject', String(o.summary ?? '')),
      ca('StartTime', compact(o.start)),
      ca('EndTime', compact(o.end)),
      ...(location ? [v16 ? asb('Location', [asb('DisplayName', location)]) : ca('Location', location)] : []),
      ca('BusyStatus', o.status === 'tentative' ? 1 : 2),
      ca('AllDayEvent', o.allDay ? '1' : '0'),
    ]);
  });
}

/** The overrides of `series` as `overrides` (its OVERRIDES before the write) after a device's Exceptions: true when one was written. */
export async function writeOverrides(records: RecordsApi, series: Row, data: WbxmlElement | undefined, overrides: Row[]): Promise<boolean> {
  const modified = kids(kid(data, 'Exceptions'), 'Exception').filter((e) => textOf(e, 'Deleted') !== '1');
  const length = new Date(series.end as string).getTime() - new Date(series.start as string).getTime();
  let wrote = false;
  for (const e of modified) {
    const rid = parseDate(textOf(e, 'ExceptionStartTime') ?? textOf(e, 'InstanceId'));
    if (!rid) continue;
    const start = parseDate(textOf(e, 'StartTime')) ?? rid;
    const end = parseDate(textOf(e, 'EndTime')) ?? new Date(start.getTime() + length);
    const location = textOf(kid(e, 'Location'), 'DisplayName') ?? textOf(e, 'Location');
    const fields: Record<string, unknown> = {
      summary: (textOf(e, 'Subject') ?? String(series.summary ?? '')).slice(0, 500),
      start: start.toISOString(),
      end: (end < start ? start : end).toISOString(),
      ...(location !== undefined ? { location: location.slice(0, 500) } : {}),
      ...(textOf(e, 'BusyStatus') === '1' ? { status: 'tentative' } : {}),
    };
    const cur = overrides.find((o) => new Date(o.recurrenceId as string).getTime() === rid.getTime());
    if (!cur) {
      await records.create({
        mailboxUid: series.mailboxUid,
        icalUid: series.icalUid,
        recurrenceId: rid.toISOString(),
        location: series.location,
        ...fields,
      });
      wrote = true;
    } else if (Object.entries(fields).some(([k, v]) => sameValue(cur[k]) !== sameValue(v))) {
      // A device sends every Exception again with each change of the series: only what differs is written.
      await records.update(String(cur.uid), fields, Number(cur.version));
      wrote = true;
    }
  }
  return wrote;
}

const sameValue = (v: unknown) =>
  v instanceof Date ? v.toISOString() : typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? new Date(v).toISOString() : String(v ?? '');
