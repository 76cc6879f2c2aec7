import { useEffect, useState } from 'react';
import { api, describeError } from '../shared/api.js';
import { ListInput } from '../shared/ListInput.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { asOccurrence, contentOf, deleteOccurrence, saveOccurrence, type Scope } from './occurrence.js';

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
  icalUid?: string;
  exdates: string[];
  /** An exception of a repeating event: the start of the occurrence it replaces. */
  recurrenceId?: string | null;
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
    exdates: [],
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

/** Which occurrences a change or a deletion of a repeating event is for. */
function ScopeChoice({ scope, onChange }: { scope: Scope; onChange(s: Scope): void }) {
  return (
    <fieldset>
      <legend>A repeating event: change or delete</legend>
      <label className="inline">
        <input type="radio" name="scope" checked={scope === 'one'} onChange={() => onChange('one')} /> This occurrence
      </label>{' '}
      <label className="inline">
        <input type="radio" name="scope" checked={scope === 'all'} onChange={() => onChange('all')} /> Every occurrence
      </label>
    </fieldset>
  );
}

/**
 * The event form: title, place, times, all day, people invited, notes; saved, deleted or closed.
 * An occurrence of a repeating event (opened at `start`) is changed or deleted alone or with its series.
 */
export function EventEditor({ uid, start, mailboxUid, onDone }: { uid: string | null; start: Date; mailboxUid: string; onDone(): void }) {
  const [ev, setEv] = useState<CalendarEvent | null>(uid ? null : newEvent(start));
  const [series, setSeries] = useState<CalendarEvent | null>(null);
  const [scope, setScope] = useState<Scope>('one');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (!uid) return;
    void api<CalendarEvent>(`/api/mail/calendar-events/${encodeURIComponent(uid)}`).then((rec) => {
      const repeating = Boolean(rec.rrule && !rec.recurrenceId);
      setSeries(repeating ? rec : null);
      setEv(repeating ? asOccurrence(rec, start) : rec);
    }, setError);
  }, [uid, start]);
  if (!ev) return <div className="dialog-body">{error !== null ? describeError(error) : 'Opening…'}</div>;
  const set = (patch: Partial<CalendarEvent>) => setEv({ ...ev, ...patch });
  const save = async () => {
    setError(null);
    try {
      if (series) await saveOccurrence(series, ev, start, scope, mailboxUid);
      else if (ev.uid)
        await api(`/api/mail/calendar-events/${encodeURIComponent(ev.uid)}`, {
          method: 'PUT',
          body: { ...contentOf(ev), version: ev.version },
        });
      else await api('/api/mail/calendar-events', { method: 'POST', body: { ...contentOf(ev), mailboxUid, timeZone: ev.timeZone } });
      onDone();
    } catch (e) {
      setError(e);
    }
  };
  const remove = async () => {
    const what = series && scope === 'one' ? 'this occurrence of ' : series ? 'every occurrence of ' : '';
    if (!ev.uid || !confirm(`Delete ${what}"${ev.summary || 'this event'}"?`)) return;
    const gone =
      series || ev.recurrenceId
        ? deleteOccurrence(series ?? ev, start, scope, mailboxUid)
        : api(`/api/mail/calendar-events/${encodeURIComponent(ev.uid)}`, { method: 'DELETE', body: { version: ev.version } });
    await gone.then(onDone, setError);
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
      {series && <ScopeChoice scope={scope} onChange={setScope} />}
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
