import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { RecordTable, RemoveButton } from '../shared/RecordTable.js';

interface Domain {
  uid: string;
  version: number;
  name: string;
  enabled: boolean;
  verified: boolean;
  aliases: string[];
}

interface Item {
  purpose: string;
  domain: string;
  type: string;
  name: string;
  value: string;
  record: string;
  note: string;
  status?: 'present' | 'missing' | 'wrong' | 'error';
  found?: string[];
  fix?: string;
}

const STATUS: Record<NonNullable<Item['status']>, string> = {
  present: 'Published',
  missing: 'Missing',
  wrong: 'Different',
  error: 'Lookup failed',
};

/** The served domains (added, enabled, removed) and the DNS records each needs, checked live on request. */
export default function Domains() {
  const [version, setVersion] = useState(0);
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);
  const add = async () => {
    setError(null);
    try {
      await api('/api/mail/domains', { method: 'POST', body: { name }, label: `Add the domain ${name}` });
      setOpen(name.trim().toLowerCase());
      setName('');
      setVersion((v) => v + 1);
    } catch (e) {
      setError(e);
    }
  };
  return (
    <>
      <form
        className="toolbar"
        aria-label="New domain"
        onSubmit={(e) => {
          e.preventDefault();
          void add();
        }}
      >
        <label>
          Domain <input type="text" required value={name} placeholder="example.org" onChange={(e) => setName(e.target.value)} />
        </label>
        <button type="submit">Add domain</button>
      </form>
      <ErrorBox error={error} />
      <RecordTable<Domain>
        label="Domains"
        path="/api/mail/domains?sort=name"
        version={version}
        empty="No domain yet: add the first one above."
        columns={[
          { label: 'Domain', cell: (d) => d.name },
          { label: 'Receives mail', cell: (d) => (d.enabled && d.verified ? 'Yes' : d.enabled ? 'Not verified yet' : 'Disabled') },
          { label: 'Aliases', cell: (d) => d.aliases.join(', ') || '—' },
        ]}
        actions={(d, run) => (
          <>
            <button type="button" className="secondary" onClick={() => setOpen(d.name)}>
              DNS records
            </button>{' '}
            <button
              type="button"
              className="secondary"
              onClick={() =>
                void run(
                  () =>
                    api(`/api/mail/domains/${d.uid}`, {
                      method: 'PUT',
                      body: { enabled: !d.enabled, version: d.version },
                      label: `${d.enabled ? 'Disable' : 'Enable'} ${d.name}`,
                    }),
                  `${d.name} ${d.enabled ? 'disabled' : 'enabled'}.`,
                )
              }
            >
              {d.enabled ? 'Disable' : 'Enable'}
            </button>{' '}
            <RemoveButton
              path={`/api/mail/domains/${d.uid}`}
              version={d.version}
              text="Remove"
              question={`Remove ${d.name}? Mail to it is refused from then on.`}
              label={`Remove ${d.name}`}
              done={`${d.name} removed.`}
              run={run}
            />
          </>
        )}
      />
      {open && <Checklist key={open} domain={open} onVerified={() => setVersion((v) => v + 1)} />}
    </>
  );
}

/** The records a domain needs; "Check now" looks them up live and verifies the domain when its MX points here. */
function Checklist({ domain, onVerified }: { domain: string; onVerified(): void }) {
  const [items, setItems] = useState<Item[] | null>(null);
  const [checking, setChecking] = useState(false);
  const [verdict, setVerdict] = useState('');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<{ items: Item[] }>(`/api/admin/dns-checklist?domain=${encodeURIComponent(domain)}`).then((r) => setItems(r.items), setError);
  }, [domain]);
  const check = async () => {
    setChecking(true);
    setError(null);
    try {
      const r = await api<{ items: Item[]; domains: Array<{ domain: string; verified: boolean; changed: boolean }> }>(
        '/api/admin/dns-checklist/verify',
        { method: 'POST', body: { domain }, label: `Check the DNS records of ${domain}` },
      );
      setItems(r.items);
      const v = r.domains.find((d) => d.domain === domain);
      setVerdict(
        v?.verified
          ? `${domain} is verified${v.changed ? ' now' : ''}: it receives mail.`
          : `${domain} is not verified: its MX does not point here yet.`,
      );
      if (v?.changed) onVerified();
    } catch (e) {
      setError(e);
    } finally {
      setChecking(false);
    }
  };
  return (
    <section aria-labelledby="dns-title" className="card">
      <h3 id="dns-title">DNS records of {domain}</h3>
      <p className="toolbar">
        <button type="button" disabled={checking} onClick={() => void check()}>
          {checking ? 'Checking…' : 'Check now'}
        </button>
        <span role="status">{verdict}</span>
      </p>
      <ErrorBox error={error} />
      {items && (
        <div className="table-scroll">
          <table aria-label={`DNS records of ${domain}`}>
            <thead>
              <tr>
                <th scope="col">Purpose</th>
                <th scope="col">Record to publish</th>
                <th scope="col">Published</th>
              </tr>
            </thead>
            <tbody>
              {items.map((i) => (
                <tr key={`${i.purpose}-${i.name}-${i.type}`} className={i.status && i.status !== 'present' ? 'problem' : undefined}>
                  <td>
                    {i.purpose}
                    <div className="muted">{i.note}</div>
                  </td>
                  <td>
                    <code>{i.record}</code>
                  </td>
                  <td>
                    {i.status ? STATUS[i.status] : 'Not checked'}
                    {i.found && i.found.length > 0 && <div className="muted">Found: {i.found.join('; ')}</div>}
                    {i.fix && <div>{i.fix}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
