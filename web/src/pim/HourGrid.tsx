import { useLayoutEffect, useRef, type CSSProperties } from 'react';
import { onDay, placeOnDay, sameDay, timeOf, type Occurrence } from './calendar-model.js';

/** Height of an hour on the grid (px); the stylesheet draws its lines at the same step (--hour). */
const HOUR_PX = 44;
const HOURS = Array.from({ length: 24 }, (_, h) => h);

const hourLabel = (h: number) => new Date(2000, 0, 1, h).toLocaleTimeString(undefined, { hour: 'numeric' });
const at = (d: Date, h: number) => new Date(d.getFullYear(), d.getMonth(), d.getDate(), h);

/** What the month grid and the hour grid show and what a click on them does. */
export interface GridProps {
  days: Date[];
  occurrences: Occurrence[];
  onNew(start: Date): void;
  onOpen(o: Occurrence): void;
}

/**
 * The week and day views: a column of 24 hours per day, timed events placed at their hours
 * (overlapping ones side by side), all-day ones above the columns. A click on an hour starts an
 * event there; from the keyboard, the day's name starts one at 9:00 (the editor sets any time).
 */
export function HourGrid({ days, occurrences, onNew, onOpen }: GridProps) {
  const body = useRef<HTMLDivElement>(null);
  // The working day in view first; the night is a scroll away.
  useLayoutEffect(() => {
    if (body.current) body.current.scrollTop = 8 * HOUR_PX;
  }, []);
  const today = new Date();
  const style = { '--days': days.length, '--hour': `${HOUR_PX}px` } as CSSProperties;
  return (
    <div className="hour-grid" style={style}>
      <div className="hour-grid-head">
        <span />
        {days.map((d) => (
          <div key={d.toISOString()} className={sameDay(d, today) ? 'today' : undefined}>
            <button
              type="button"
              className="link day-name"

              onClick={() => onNew(at(d, 9))}
            >
              {d.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric', month: 'short' })}
              <span className="visually-hidden">: new event</span>
            </button>
            <ul className="plain">
              {onDay(occurrences, d)
                .filter((o) => o.allDay)
                .map((o) => (
                  <li key={`${o.eventUid}-${o.start}`}>
                    <button type="button" className="event-chip" onClick={() => onOpen(o)}>
                      {o.summary || '(no title)'}
                    </button>
                  </li>
                ))}
            </ul>
          </div>
        ))}
      </div>
      <div className="hour-grid-body" ref={body}>
        <ol className="plain hours" aria-hidden="true">
          {HOURS.map((h) => (
            <li key={h}>{hourLabel(h)}</li>
          ))}
        </ol>
        {days.map((d) => (
          <div
            key={d.toISOString()}
            className="hour-column"
            role="group"
            aria-label={d.toLocaleDateString(undefined, { dateStyle: 'full' })}
          >
            {/* Pointer shortcuts to start an event at an hour; out of the tab order (the day's name serves the keyboard). */}
            <div className="hour-slots" aria-hidden="true">
              {HOURS.map((h) => (
                <button key={h} type="button" tabIndex={-1} onClick={() => onNew(at(d, h))} />
              ))}
            </div>
            {placeOnDay(occurrences, d).map((p) => (
              <button
                key={`${p.o.eventUid}-${p.o.start}`}
                type="button"
                className="event-chip placed"
                style={{
                  top: `${p.top * 100}%`,
                  height: `${p.height * 100}%`,
                  left: `${(p.lane / p.lanes) * 100}%`,
                  width: `${100 / p.lanes}%`,
                }}
                onClick={() => onOpen(p.o)}
              >
                {timeOf(p.o.start)} {p.o.summary || '(no title)'}
              </button>
            ))}
          </div>
        ))}
      </div>
    </div>
  );
}
