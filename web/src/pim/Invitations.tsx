import { useState } from 'react';
import { api } from '../shared/api.js';
import type { CalendarEvent } from './EventEditor.js';
import { ErrorBox } from '../shared/ErrorBox.js';

type Answer = 'accepted' | 'tentative' | 'declined';

/** The invitations this mailbox has not answered: each can be accepted, accepted tentatively or declined (the organizer is told). */
export function Invitations({ events, own, changed }: { events: CalendarEvent[]; own: string[]; changed(): void }) {
  const [error, setError] = useState<unknown>(null);
  const mine = new Set(own.map((a) => a.toLowerCase()));
  const open = events.filter(
    (e) =>
      e.organizer &&
      !mine.has(e.organizer.email.toLowerCase()) &&
      Date.parse(e.end) > Date.now() &&
      e.attendees.some((a) => mine.has(a.email.toLowerCase()) && (a.partstat ?? 'needs-action') === 'needs-action'),
  );
  if (!open.length) return null;
  const answer = (e: CalendarEvent, response: Answer) =>
    api(`/api/mail/calendar-events/${encodeURIComponent(e.uid!)}/respond`, { method: 'POST', body: { response } }).then(changed, setError);
  return (
    <section aria-label="Invitations" className="notice invitations">
      <h3>Invitations</h3>
      <ErrorBox error={error} />
      <ul className="plain">
        {open.map((e) => (
          <li key={e.uid}>
            <strong>{e.summary || '(no title)'}</strong> {new Date(e.start).toLocaleString()} · from{' '}
            {e.organizer?.name || e.organizer?.email}{' '}
            <button type="button" onClick={() => void answer(e, 'accepted')}>
              Accept
            </button>{' '}
            <button type="button" className="secondary" onClick={() => void answer(e, 'tentative')}>
              Tentative
            </button>{' '}
            <button type="button" className="secondary" onClick={() => void answer(e, 'declined')}>
              Decline
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
