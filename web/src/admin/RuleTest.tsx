import { useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { ListInput } from '../shared/ListInput.js';

interface Trace {
  decision: {
    reject: { rule: string; notice: string | null } | null;
    addHeaders: Array<[string, string]>;
    addRecipients: string[];
    quarantine: string | null;
  };
  rules: Array<{ uid: string; name: string; priority: number; matched: boolean; skipped: boolean }>;
}

const SAMPLE = 'From: Someone <someone@example.net>\nTo: you@example.org\nSubject: Invoice 2026\n';

/** What the decision means for the message, in words. */
function outcome(d: Trace['decision']): string {
  if (d.reject) return `Rejected by “${d.reject.rule}”${d.reject.notice ? `: ${d.reject.notice}` : ''}.`;
  const parts = [
    d.quarantine && `held in quarantine by “${d.quarantine}”`,
    d.addHeaders.length && `headers added: ${d.addHeaders.map(([k, v]) => `${k}: ${v}`).join('; ')}`,
    d.addRecipients.length && `also sent to ${d.addRecipients.join(', ')}`,
  ].filter(Boolean);
  return parts.length ? `${parts.join('; ')}.` : 'Delivered as it came: no rule matches.';
}

/** Tries the enabled rules on a message (POST /api/mail/transport-rules/test): nothing is delivered. */
export function RuleTest() {
  const [message, setMessage] = useState(SAMPLE);
  const [from, setFrom] = useState('someone@example.net');
  const [rcpts, setRcpts] = useState<string[]>([]);
  const [trace, setTrace] = useState<Trace | null>(null);
  const [error, setError] = useState<unknown>(null);
  const test = async () => {
    setError(null);
    try {
      setTrace(
        await api<Trace>('/api/mail/transport-rules/test', {
          method: 'POST',
          body: { message, envelopeFrom: from, recipients: rcpts },
          label: 'Try the transport rules on a message',
        }),
      );
    } catch (e) {
      setError(e);
    }
  };
  return (
    <form
      className="stack card"
      aria-label="Try the rules on a message"
      onSubmit={(e) => {
        e.preventDefault();
        void test();
      }}
    >
      <h3>Try the rules on a message</h3>
      <ErrorBox error={error} />
      <label>
        Message headers (or the whole message)
        <textarea rows={5} required value={message} onChange={(e) => setMessage(e.target.value)} />
      </label>
      <label>
        Envelope sender <input type="text" value={from} onChange={(e) => setFrom(e.target.value)} />
      </label>
      <label>
        Recipients (comma-separated)
        <ListInput label="Recipients (comma-separated)" values={rcpts} onChange={setRcpts} />
      </label>
      <span>
        <button type="submit">Try</button>
      </span>
      {trace && (
        <div role="status">
          <p>
            <strong>{outcome(trace.decision)}</strong>
          </p>
          <ol>
            {trace.rules.map((r) => (
              <li key={r.uid}>
                {r.name}: {r.skipped ? 'not reached (an earlier rule rejected it)' : r.matched ? 'matches' : 'does not match'}
              </li>
            ))}
          </ol>
        </div>
      )}
    </form>
  );
}
