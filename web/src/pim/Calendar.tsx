import { useCallback, useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { daysOf, onDay, rangeOf, sameDay, step, titleOf, timeOf, type CalendarView, type Occurrence } from './calendar-model.js';
import { EventEditor, type CalendarEvent } from './EventEditor.js';
import { Invitations } from './Invitations.js';
import { HourGrid, type GridProps } from './HourGrid.js';
import { ImportExport } from './ImportExport.js';
import { ErrorBox } from '../shared/ErrorBox.js';

/** The mailbox calendar: a month of occurrences, or a week or day on an hour grid; an event opens in the editor; invitations to answer beside it. */
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
      <ImportExport
        what="calendar"
        exportPath={`/api/mail/calendar-events/export?mailboxUid=${encodeURIComponent(mailboxUid)}`}
        importPath={`/api/mail/calendar-events/import?mailboxUid=${encodeURIComponent(mailboxUid)}`}
        type="text/calendar"
        accept=".ics,text/calendar"
        imported={() => void load().catch(setError)}
      />
      <Invitations events={events} own={own} changed={() => void load().catch(setError)} />
      {editing && (
        <EventEditor
          key={`${editing.uid ?? 'new'} ${editing.start.toISOString()}`}
          uid={editing.uid}
          start={editing.start}
          mailboxUid={mailboxUid}
          onDone={() => {
            setEditing(null);
            void load().catch(setError);
          }}
        />
      )}
      {view === 'month' ? (
        <MonthGrid
          days={days}
          at={at}
          occurrences={occurrences}
          onNew={(start) => setEditing({ uid: null, start })}
          onOpen={(o) => setEditing({ uid: o.eventUid, start: new Date(o.start) })}
        />
      ) : (
        <HourGrid
          days={days}
          occurrences={occurrences}
          onNew={(start) => setEditing({ uid: null, start })}
          onOpen={(o) => setEditing({ uid: o.eventUid, start: new Date(o.start) })}
        />
      )}
    </section>
  );
}

const atNine = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate(), 9);

/** The month view: a square per day with its occurrences; the day's number starts an event at 9:00. */
function MonthGrid({ days, at, occurrences, onNew, onOpen }: GridProps & { at: Date }) {
  const today = new Date();
  return (
    <ol className="days days-month" aria-label={titleOf('month', at)}>
      {days.map((d) => (
        <li key={d.toISOString()} className={`${sameDay(d, today) ? 'today' : ''} ${d.getMonth() !== at.getMonth() ? 'other-month' : ''}`}>
          <button
            type="button"
            className="link day-name"

            onClick={() => onNew(atNine(d))}
          >
            {d.toLocaleDateString(undefined, { day: 'numeric' })}
            <span className="visually-hidden">{` ${d.toLocaleDateString(undefined, { month: 'long', year: 'numeric' })}: new event`}</span>
          </button>
          <ul className="plain">
            {onDay(occurrences, d).map((o) => (
              <li key={`${o.eventUid}-${o.start}`}>
                <button type="button" className="event-chip" onClick={() => onOpen(o)}>
                  {o.allDay ? '' : `${timeOf(o.start)} `}
                  {o.summary || '(no title)'}
                </button>
              </li>
            ))}
          </ul>
        </li>
      ))}
    </ol>
  );
}
