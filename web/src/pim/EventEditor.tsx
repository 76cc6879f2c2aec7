import { useEffect, useState } from 'react';
import { api, describeError } from '../shared/api.js';
import { ListInput } from '../shared/ListInput.js';
import { ErrorBox } from '../shared/ErrorBox.js';

export interface CalendarEvent {
  uid?: string;
  version?: number;
  summary: string;
  location: string;
  description: string;
  start: string;
  end: string;
  allDay: boolean;
  timeZone: string;
  attendees: Array<{ email: string; name?: string; partstat?: string }>;
  organizer: { email: string; name?: string } | null;
  rrule: string | null;
}

/** An ISO time as a datetime-local value where the user is, and back. */
const toLocal = (iso: string) => {
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const fromLocal = (v: string) => new Date(v).toISOString();
const zone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** A new event at `start` for an hour. */
export function newEvent(start: Date): CalendarEvent {
  return {
    summary: '',
    location: '',
    description: '',
    start: start.toISOString(),
    end: new Date(start.getTime() + 3600_000).toISOString(),
    allDay: false,
    timeZone: zone(),
    attendees: [],
    organizer: null,
    rrule: null,
  };
}

/** Who is invited, as addresses; those already invited keep their answers. */
function InviteField({ attendees, onChange }: { attendees: CalendarEvent['attendees']; onChange(a: CalendarEvent['attendees']): void }) {
  return (
    <label>
      Invite (addresses, comma-separated)
      <ListInput
        label="Invite (addresses, comma-separated)"
        values={attendees.map((a) => a.email)}
        onChange={(emails) => onChange(emails.map((email) => attendees.find((a) => a.email === email) ?? { email }))}
      />
    </label>
  );
}

/** The event form: title, place, times, all day, people invited, notes; saved, deleted or closed. */
export function EventEditor({ uid, start, mailboxUid, onDone }: { uid: string | null; start: Date; mailboxUid: string; onDone(): void }) {
  const [ev, setEv] = useState<CalendarEvent | null>(uid ? null : newEvent(start));
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (uid) void api<CalendarEvent>(`/api/mail/calendar-events/${encodeURIComponent(uid)}`).then(setEv, setError);
  }, [uid]);
  if (!ev) return <div className="dialog-body">{error !== null ? describeError(error) : 'Opening…'}</div>;
  const set = (patch: Partial<CalendarEvent>) => setEv({ ...ev, ...patch });
  const save = async () => {
    setError(null);
    const body = {
      summary: ev.summary,
      location: ev.location,
      description: ev.description,
      start: ev.start,
      end: ev.end,
      allDay: ev.allDay,
      attendees: ev.attendees,
    };
    try {
      if (ev.uid)
        await api(`/api/mail/calendar-events/${encodeURIComponent(ev.uid)}`, { method: 'PUT', body: { ...body, version: ev.version } });
      else await api('/api/mail/calendar-events', { method: 'POST', body: { ...body, mailboxUid, timeZone: ev.timeZone } });
      onDone();
    } catch (e) {
      setError(e);
    }
  };
  const remove = async () => {
    if (!ev.uid || !confirm(`Delete "${ev.summary || 'this event'}"?`)) return;
    await api(`/api/mail/calendar-events/${encodeURIComponent(ev.uid)}`, { method: 'DELETE', body: { version: ev.version } }).then(
      onDone,
      setError,
    );
  };
  return (
    <form
      className="stack event-form"
      aria-label={ev.uid ? 'Event' : 'New event'}
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <ErrorBox error={error} />
      {ev.rrule && <p className="notice">A repeating event: a change applies to every occurrence.</p>}
      <label>
        Title <input type="text" required value={ev.summary} onChange={(e) => set({ summary: e.target.value })} />
      </label>
      <label>
        Where <input type="text" value={ev.location} onChange={(e) => set({ location: e.target.value })} />
      </label>
      <label className="inline">
        <input type="checkbox" checked={ev.allDay} onChange={(e) => set({ allDay: e.target.checked })} /> All day
      </label>
      <label>
        Starts{' '}
        <input
          type="datetime-local"
          required
          value={toLocal(ev.start)}
          onChange={(e) => e.target.value && set({ start: fromLocal(e.target.value) })}
        />
      </label>
      <label>
        Ends{' '}
        <input
          type="datetime-local"
          required
          value={toLocal(ev.end)}
          onChange={(e) => e.target.value && set({ end: fromLocal(e.target.value) })}
        />
      </label>
      <InviteField attendees={ev.attendees} onChange={(attendees) => set({ attendees })} />
      <label>
        Notes <textarea rows={4} value={ev.description} onChange={(e) => set({ description: e.target.value })} />
      </label>
      <span>
        <button type="submit">Save event</button>{' '}
        {ev.uid && (
          <button type="button" className="secondary" onClick={() => void remove()}>
            Delete event
          </button>
        )}{' '}
        <button type="button" className="secondary" onClick={onDone}>
          Close
        </button>
      </span>
    </form>
  );
}
