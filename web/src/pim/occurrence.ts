// One occurrence of a repeating event, or the whole series, changed or deleted the iCalendar way
// (RFC 5545): a changed occurrence is an exception — an event of the series' UID whose
// RECURRENCE-ID is the start it replaces — a deleted one an EXDATE of the series; a change to the
// series moves it by as much as the occurrence shown was moved.
import { api } from '../shared/api.js';
import type { CalendarEvent } from './EventEditor.js';

export type Scope = 'one' | 'all';

const path = (uid: string) => `/api/mail/calendar-events/${encodeURIComponent(uid)}`;
const ms = (iso: string) => Date.parse(iso);

/** The event as the form shows it for the occurrence starting at `at`: the occurrence's times, the series' content. */
export function asOccurrence(series: CalendarEvent, at: Date): CalendarEvent {
  const length = ms(series.end) - ms(series.start);
  return { ...series, start: at.toISOString(), end: new Date(at.getTime() + length).toISOString() };
}

/** What the form edits of an event (the rest stays as stored). */
export const contentOf = (ev: CalendarEvent) => ({
  summary: ev.summary,
  location: ev.location,
  description: ev.description,
  start: ev.start,
  end: ev.end,
  allDay: ev.allDay,
  attendees: ev.attendees,
});

/**
 * Saves the form of an occurrence (first shown at `at`): `one` makes it an exception of the series,
 * `all` changes the series, its start and end moved by as much as the form moved the occurrence's.
 */
export async function saveOccurrence(
  series: CalendarEvent,
  form: CalendarEvent,
  at: Date,
  scope: Scope,
  mailboxUid: string,
): Promise<void> {
  if (scope === 'one') {
    await api('/api/mail/calendar-events', {
      method: 'POST',
      body: {
        ...contentOf(form),
        mailboxUid,
        icalUid: series.icalUid,
        recurrenceId: at.toISOString(),
        timeZone: series.timeZone,
        organizer: series.organizer,
      },
    });
    return;
  }
  const moved = ms(form.start) - at.getTime();
  const length = ms(form.end) - ms(form.start);
  const start = new Date(ms(series.start) + moved);
  await api(path(series.uid!), {
    method: 'PUT',
    body: {
      ...contentOf(form),
      start: start.toISOString(),
      end: new Date(start.getTime() + length).toISOString(),
      version: series.version,
    },
  });
}

/** The series an exception belongs to (same UID, no RECURRENCE-ID), if the mailbox has it. */
async function seriesOf(ev: CalendarEvent, mailboxUid: string): Promise<CalendarEvent | undefined> {
  const q = new URLSearchParams({ mailboxUid, icalUid: ev.icalUid ?? '', recurrenceId: 'null', limit: '1' });
  return (await api<CalendarEvent[]>(`/api/mail/calendar-events?${q}`))[0];
}

/**
 * Deletes an occurrence (`one`: the series skips it from now on) or the whole series with its
 * exceptions (`all`). An exception deleted alone is skipped by its series too, or the occurrence it
 * replaced would come back.
 */
export async function deleteOccurrence(ev: CalendarEvent, at: Date, scope: Scope, mailboxUid: string): Promise<void> {
  if (ev.recurrenceId) {
    const series = await seriesOf(ev, mailboxUid);
    if (series)
      await api(path(series.uid!), { method: 'PUT', body: { exdates: [...series.exdates, ev.recurrenceId], version: series.version } });
    await api(path(ev.uid!), { method: 'DELETE', body: { version: ev.version } });
    return;
  }
  if (scope === 'one') {
    await api(path(ev.uid!), { method: 'PUT', body: { exdates: [...ev.exdates, at.toISOString()], version: ev.version } });
    return;
  }
  const q = new URLSearchParams({ mailboxUid, icalUid: ev.icalUid ?? '', limit: '1000' });
  const exceptions = (await api<CalendarEvent[]>(`/api/mail/calendar-events?${q}`)).filter((x) => x.uid !== ev.uid);
  for (const x of exceptions) await api(path(x.uid!), { method: 'DELETE', body: { version: x.version } });
  await api(path(ev.uid!), { method: 'DELETE', body: { version: ev.version } });
}
