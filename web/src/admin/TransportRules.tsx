import { useState } from 'react';
import { api } from '../shared/api.js';
import { CardForm } from '../shared/CardForm.js';
import { RecordTable, RemoveButton } from '../shared/RecordTable.js';
import { RuleTest } from './RuleTest.js';

type Action = 'reject' | 'addHeader' | 'addRecipient' | 'quarantine';

export interface TransportRule {
  uid: string;
  version: number;
  name: string;
  enabled: boolean;
  priority: number;
  match: { fromContains?: string; senderDomain?: string; recipientContains?: string; subjectContains?: string };
  action: Action;
  headerName: string | null;
  headerValue: string | null;
  recipient: string | null;
  rejectNotice: string | null;
}

const ACTIONS: Array<[Action, string]> = [
  ['reject', 'Reject it'],
  ['quarantine', 'Hold it in quarantine'],
  ['addHeader', 'Add a header'],
  ['addRecipient', 'Also send it to'],
];
const CONDITIONS: Array<[keyof TransportRule['match'], string]> = [
  ['fromContains', 'From contains'],
  ['senderDomain', 'Sender domain is'],
  ['recipientContains', 'A recipient contains'],
  ['subjectContains', 'Subject contains'],
];

type Form = Pick<TransportRule, 'name' | 'priority' | 'match' | 'action'> & { headerName: string; headerValue: string; recipient: string };
const BLANK: Form = { name: '', priority: 100, match: {}, action: 'quarantine', headerName: '', headerValue: '', recipient: '' };

/** The fields a rule is sent with: empty conditions left out, the action's own fields only. */
function bodyOf(f: Form) {
  const match = Object.fromEntries(Object.entries(f.match).filter(([, v]) => v));
  return {
    name: f.name,
    priority: f.priority,
    match,
    action: f.action,
    headerName: f.action === 'addHeader' ? f.headerName : null,
    headerValue: f.action === 'addHeader' ? f.headerValue : null,
    recipient: f.action === 'addRecipient' ? f.recipient : null,
  };
}

/** A new rule: its conditions (all must match), what it does, and its place in the order. */
function RuleForm({ created }: { created(): void }) {
  const [form, setForm] = useState<Form>(BLANK);
  const save = async () => {
    await api('/api/mail/transport-rules', { method: 'POST', body: bodyOf(form), label: `Create the transport rule ${form.name}` });
    setForm(BLANK);
    created();
  };
  return (
    <CardForm title="New transport rule" submit={save}>
      <label>
        Name <input type="text" required value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
      </label>
      <fieldset>
        <legend>When every filled-in condition matches</legend>
        {CONDITIONS.map(([key, label]) => (
          <label key={key}>
            {label}{' '}
            <input
              type="text"
              value={form.match[key] ?? ''}
              onChange={(e) => setForm({ ...form, match: { ...form.match, [key]: e.target.value } })}
            />
          </label>
        ))}
      </fieldset>
      <label>
        Then{' '}
        <select value={form.action} onChange={(e) => setForm({ ...form, action: e.target.value as Action })}>
          {ACTIONS.map(([a, label]) => (
            <option key={a} value={a}>
              {label}
            </option>
          ))}
        </select>
      </label>
      {form.action === 'addHeader' && (
        <>
          <label>
            Header name{' '}
            <input type="text" required value={form.headerName} onChange={(e) => setForm({ ...form, headerName: e.target.value })} />
          </label>
          <label>
            Header value <input type="text" value={form.headerValue} onChange={(e) => setForm({ ...form, headerValue: e.target.value })} />
          </label>
        </>
      )}
      {form.action === 'addRecipient' && (
        <label>
          Recipient <input type="email" required value={form.recipient} onChange={(e) => setForm({ ...form, recipient: e.target.value })} />
        </label>
      )}
      <label>
        Order (lower runs first){' '}
        <input type="number" required value={form.priority} onChange={(e) => setForm({ ...form, priority: Number(e.target.value) })} />
      </label>
      <span>
        <button type="submit">Create rule</button>
      </span>
    </CardForm>
  );
}

const conditionsOf = (r: TransportRule) =>
  CONDITIONS.filter(([k]) => r.match[k])
    .map(([k, label]) => `${label} “${r.match[k]}”`)
    .join(' and ') || 'Every message';

/** Transport rules in the order delivery runs them, with a preview of what they do to a message. */
export default function TransportRules() {
  const [version, setVersion] = useState(0);
  const again = () => setVersion((v) => v + 1);
  return (
    <>
      <RuleForm created={again} />
      <RecordTable<TransportRule>
        label="Transport rules"
        path="/api/mail/transport-rules?sort=priority,createdAt"
        version={version}
        empty="No transport rule: every message is delivered as it comes."
        columns={[
          { label: 'Order', cell: (r) => r.priority },
          { label: 'Rule', cell: (r) => r.name },
          { label: 'When', cell: conditionsOf },
          { label: 'Then', cell: (r) => ACTIONS.find(([a]) => a === r.action)?.[1] ?? r.action },
          { label: 'State', cell: (r) => (r.enabled ? 'On' : 'Off') },
        ]}
        actions={(r, run) => (
          <>
            <button
              type="button"
              className="secondary"
              onClick={() =>
                void run(
                  () =>
                    api(`/api/mail/transport-rules/${r.uid}`, {
                      method: 'PUT',
                      body: { enabled: !r.enabled, version: r.version },
                      label: `Turn the rule ${r.name} ${r.enabled ? 'off' : 'on'}`,
                    }),
                  `${r.name} turned ${r.enabled ? 'off' : 'on'}.`,
                )
              }
            >
              {r.enabled ? 'Turn off' : 'Turn on'}
            </button>{' '}
            <RemoveButton
              path={`/api/mail/transport-rules/${r.uid}`}
              version={r.version}
              text="Delete"
              question={`Delete the rule ${r.name}?`}
              label={`Delete the rule ${r.name}`}
              done={`${r.name} deleted.`}
              run={run}
            />
          </>
        )}
      />
      <RuleTest />
    </>
  );
}
