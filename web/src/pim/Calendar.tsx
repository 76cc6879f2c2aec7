import { useCallback, useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { daysOf, onDay, rangeOf, sameDay, step, titleOf, type CalendarView, type Occurrence } from './calendar-model.js';
import { EventEditor, type CalendarEvent } from './EventEditor.js';
import { Invitations } from './Invitations.js';
import { ErrorBox } from '../shared/ErrorBox.js';

const time = (iso: string) => new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

/** The mailbox calendar: a month, week or day of occurrences; an event opens in the editor; invitations to answer beside it. */
export function Calendar({ mailboxUid, own }: { mailboxUid: string; own: string[] }) {
  const [view, setView] = useState<CalendarView>('month');
  const [at, setAt] = useState(() => new Date());
  const [occurrences, setOccurrences] = useState<Occurrence[]>([]);
  const [events, setEvents] = useState<CalendarEvent[]>([]);
  const [editing, setEditing] = useState<{ uid: string | null; start: Date } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(async () => {
    const { from, to } = rangeOf(view, at);
    const q = new URLSearchParams({ mailboxUid, from: from.toISOString(), to: to.toISOString() });
    const [occ, all] = await Promise.all([
      api<Occurrence[]>(`/api/mail/calendar-events/occurrences?${q}`),
      api<CalendarEvent[]>(`/api/mail/calendar-events?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=1000&sort=-start`),
    ]);
    setOccurrences(occ);
    setEvents(all);
  }, [view, at, mailboxUid]);
  useEffect(() => {
    load().catch(setError);
  }, [load]);
  const days = daysOf(view, at);
  const today = new Date();
  const atNine = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate(), 9);
  return (
    <section className="calendar" aria-label="Calendar">
      <div className="toolbar" role="toolbar" aria-label="Calendar view">
        <button type="button" className="secondary" onClick={() => setAt(new Date())}>
          Today
        </button>
        <button type="button" className="secondary" aria-label="Previous" onClick={() => setAt(step(view, at, -1))}>
          ‹
        </button>
        <button type="button" className="secondary" aria-label="Next" onClick={() => setAt(step(view, at, 1))}>
          ›
        </button>
        <h2 className="calendar-title">{titleOf(view, at)}</h2>
        <select aria-label="Show" value={view} onChange={(e) => setView(e.target.value as CalendarView)}>
          <option value="month">Month</option>
          <option value="week">Week</option>
          <option value="day">Day</option>
        </select>
        <button type="button" onClick={() => setEditing({ uid: null, start: atNine(at) })}>
          New event
        </button>
      </div>
      <ErrorBox error={error} />
      <Invitations events={events} own={own} changed={() => void load().catch(setError)} />
      {editing && (
        <EventEditor
          key={editing.uid ?? editing.start.toISOString()}
          uid={editing.uid}
          start={editing.start}
          mailboxUid={mailboxUid}
          onDone={() => {
            setEditing(null);
            void load().catch(setError);
          }}
        />
      )}
      <ol className={`days days-${view}`} aria-label={titleOf(view, at)}>
        {days.map((d) => (
          <li
            key={d.toISOString()}
            className={`${sameDay(d, today) ? 'today' : ''} ${view === 'month' && d.getMonth() !== at.getMonth() ? 'other-month' : ''}`}
          >
            <button
              type="button"
              className="link day-name"
              aria-label={`New event on ${d.toLocaleDateString()}`}
              onClick={() => setEditing({ uid: null, start: atNine(d) })}
            >
              {d.toLocaleDateString(
                undefined,
                view === 'month' ? { day: 'numeric' } : { weekday: 'short', day: 'numeric', month: 'short' },
              )}
            </button>
            <ul className="plain">
              {onDay(occurrences, d).map((o) => (
                <li key={`${o.eventUid}-${o.start}`}>
                  <button type="button" className="event-chip" onClick={() => setEditing({ uid: o.eventUid, start: new Date(o.start) })}>
                    {o.allDay ? '' : `${time(o.start)} `}
                    {o.summary || '(no title)'}
                  </button>
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ol>
    </section>
  );
}
