import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { Section } from '../shared/Section.js';

interface Reply {
  enabled: boolean;
  subject: string;
  body: string;
  startsAt: string | null;
  endsAt: string | null;
}

/** An ISO time as a datetime-local value where the user is, and back. */
const toLocal = (iso: string | null) => {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const fromLocal = (v: string) => (v ? new Date(v).toISOString() : null);

/** The out-of-office reply: on or off, an optional period, its subject and text. */
export function OutOfOffice({ mailboxUid }: { mailboxUid: string }) {
  const path = `/api/mail/mailboxes/${encodeURIComponent(mailboxUid)}/out-of-office`;
  const [reply, setReply] = useState<Reply | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    void api<Reply>(path).then(setReply, setError);
  }, [path]);
  if (!reply)
    return (
      <Section id="out-of-office" title="Out of office" error={error}>
        {null}
      </Section>
    );
  const set = (patch: Partial<Reply>) => {
    setSaved(false);
    setReply({ ...reply, ...patch });
  };
  const save = () => {
    setError(null);
    void api<Reply>(path, { method: 'PUT', body: reply }).then((r) => (setReply(r), setSaved(true)), setError);
  };
  return (
    <Section
      id="out-of-office"
      title="Out of office"
      intro="Answers each person who writes once a day; mailing lists and automated mail get no answer."
      error={error}
    >
      <form
        className="stack"
        aria-label="Out-of-office reply"
        onSubmit={(e) => {
          e.preventDefault();
          save();
        }}
      >
        <label className="inline">
          <input type="checkbox" checked={reply.enabled} onChange={(e) => set({ enabled: e.target.checked })} /> Send automatic replies
        </label>
        <label>
          From{' '}
          <input type="datetime-local" value={toLocal(reply.startsAt)} onChange={(e) => set({ startsAt: fromLocal(e.target.value) })} />
        </label>
        <label>
          Until <input type="datetime-local" value={toLocal(reply.endsAt)} onChange={(e) => set({ endsAt: fromLocal(e.target.value) })} />
        </label>
        <label>
          Subject <input type="text" required value={reply.subject} onChange={(e) => set({ subject: e.target.value })} />
        </label>
        <label>
          Message <textarea rows={5} value={reply.body} onChange={(e) => set({ body: e.target.value })} />
        </label>
        <span>
          <button type="submit">Save reply</button> <span role="status">{saved ? 'Saved.' : ''}</span>
        </span>
      </form>
    </Section>
  );
}
