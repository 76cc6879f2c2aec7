import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';

type Values = Record<string, unknown> & { version: number };

/** One policy read, changed in a form and saved with the version read (changed meanwhile: 409, read it again). */
function usePolicy(name: string) {
  const [values, setValues] = useState<Values | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [told, setTold] = useState('');
  const load = useCallback(() => api<Values>(`/api/system/${name}`).then(setValues, setError), [name]);
  useEffect(() => {
    void load();
  }, [load]);
  const save = async (patch: Record<string, unknown>, label: string) => {
    setError(null);
    setTold('');
    try {
      setValues(await api<Values>(`/api/system/${name}`, { method: 'PUT', body: { ...patch, version: values?.version }, label }));
      setTold('Saved.');
    } catch (e) {
      setError(e);
      await load();
    }
  };
  return { values, setValues, error, told, save };
}

function PolicyForm({
  title,
  intro,
  name,
  label,
  children,
}: {
  title: string;
  intro: string;
  name: string;
  label: string;
  children(p: ReturnType<typeof usePolicy>): ReactNode;
}) {
  const p = usePolicy(name);
  const id = `${name}-title`;
  return (
    <section aria-labelledby={id} className="card">
      <h3 id={id}>{title}</h3>
      <p className="muted">{intro}</p>
      <ErrorBox error={p.error} />
      {p.values && (
        <form
          className="stack"
          aria-labelledby={id}
          onSubmit={(e) => {
            e.preventDefault();
            const { version: _v, updatedAt: _u, ...patch } = p.values!;
            void p.save(patch, label);
          }}
        >
          {children(p)}
          <span>
            <button type="submit">Save</button> <span role="status">{p.told}</span>
          </span>
        </form>
      )}
    </section>
  );
}

const CHOICES: Array<[string, string]> = [
  ['automatic', 'Always encrypted'],
  ['optional', 'The sender chooses'],
  ['prohibited', 'Never encrypted'],
];
const RECEIPTS = ['ask', 'always', 'never'];
const RETENTION: Array<[string, string]> = [
  ['inboxDays', 'Inbox'],
  ['sentDays', 'Sent Items'],
  ['deletedDays', 'Deleted Items'],
  ['junkDays', 'Junk'],
  ['archiveDays', 'Archive'],
  ['userFoldersDays', 'Folders users made'],
];

/** The deployment's encryption, mailbox and retention policies; each change is audited. */
export default function Policies() {
  return (
    <>
      <PolicyForm
        title="Encryption"
        name="encryption-policy"
        label="Change the encryption policy"
        intro="Whether mail is end-to-end encrypted, by who the recipients are."
      >
        {({ values, setValues }) =>
          (
            [
              ['encryptSameOrg', 'To people on this server'],
              ['encryptFederated', 'To federated servers'],
              ['encryptExternal', 'To everyone else'],
            ] as const
          ).map(([key, label]) => (
            <label key={key}>
              {label}{' '}
              <select value={String(values![key])} onChange={(e) => setValues({ ...values!, [key]: e.target.value })}>
                {CHOICES.map(([v, l]) => (
                  <option key={v} value={v}>
                    {l}
                  </option>
                ))}
              </select>
            </label>
          ))
        }
      </PolicyForm>
      <MailboxPolicy />
      <PolicyForm
        title="Retention"
        name="retention-policy"
        label="Change the retention policy"
        intro="Messages older than this many days are deleted (empty: kept). Mail on legal hold is never deleted."
      >
        {({ values, setValues }) =>
          RETENTION.map(([key, label]) => (
            <label key={key}>
              {label} (days){' '}
              <input
                type="number"
                min={1}
                value={values![key] === null ? '' : String(values![key])}
                onChange={(e) => setValues({ ...values!, [key]: e.target.value ? Number(e.target.value) : null })}
              />
            </label>
          ))
        }
      </PolicyForm>
    </>
  );
}

/** Defaults and limits of mailboxes: quota, aliases, plus addressing, read receipts. */
function MailboxPolicy() {
  return (
    <PolicyForm
      title="Mailboxes"
      name="mailbox-policy"
      label="Change the mailbox policy"
      intro="Defaults for new mailboxes and limits for all of them."
    >
      {({ values, setValues }) => {
        const v = values!;
        const receipts = v.defaultReceiptSettings as Record<string, string>;
        return (
          <>
            <label>
              Default quota in MB (0: none){' '}
              <input
                type="number"
                min={0}
                value={Number(v.defaultQuotaBytes) / 1048576}
                onChange={(e) => setValues({ ...v, defaultQuotaBytes: Math.round(Number(e.target.value) * 1048576) })}
              />
            </label>
            <label>
              Most aliases a mailbox may have{' '}
              <input
                type="number"
                min={0}
                max={100}
                value={Number(v.maxAliases)}
                onChange={(e) => setValues({ ...v, maxAliases: Number(e.target.value) })}
              />
            </label>
            <label className="inline">
              <input
                type="checkbox"
                checked={Boolean(v.plusAddressing)}
                onChange={(e) => setValues({ ...v, plusAddressing: e.target.checked })}
              />{' '}
              Plus addressing (user+tag@ reaches user@)
            </label>
            <fieldset>
              <legend>Read receipts of new mailboxes</legend>
              {(['internal', 'federated', 'external'] as const).map((k) => (
                <label key={k}>
                  To {k} senders{' '}
                  <select
                    value={receipts[k]}
                    onChange={(e) => setValues({ ...v, defaultReceiptSettings: { ...receipts, [k]: e.target.value } })}
                  >
                    {RECEIPTS.map((r) => (
                      <option key={r} value={r}>
                        {r}
                      </option>
                    ))}
                  </select>
                </label>
              ))}
            </fieldset>
          </>
        );
      }}
    </PolicyForm>
  );
}
