import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { at } from '../shared/RecordTable.js';
import { Bars } from './charts.js';
import { countersOf, type Counters } from './metrics.js';

interface Probe {
  reachable: boolean;
  detail: string;
  ms: number;
}

interface Diagnostics {
  generatedAt: string;
  status: 'ok' | 'degraded';
  problems: string[];
  versions: { product: string; node: string; datastore: { kind: string; version: string } };
  daemons: Array<{
    daemon: string;
    alive: number;
    processes: Array<{ instance: string; host: string; ageSeconds: number; alive: boolean }>;
  }>;
  queues: Record<'ingest' | 'outbound' | 'handoffs', Record<string, number>>;
  scanners: { rspamd: Probe; clamd: Probe };
  transport: Probe & { provider: string };
}

interface Failed {
  uid: string;
  recipient: string;
  lastError: string | null;
  updatedAt: string;
}

/** The state of the service at a glance: problems first, daemons, scanners, queues and mail volume (from metrics). */
export function Dashboard() {
  const [diag, setDiag] = useState<Diagnostics | null>(null);
  const [counters, setCounters] = useState<Counters | null>(null);
  const [failed, setFailed] = useState<Failed[]>([]);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const load = () =>
      Promise.all([
        api<Diagnostics>('/api/admin/diagnostics').then(setDiag),
        fetch('/api/metrics', { credentials: 'same-origin' })
          .then((r) => (r.ok ? r.text() : ''))
          .then((t) => setCounters(countersOf(t))),
        api<Failed[]>('/api/mail/ingest-queue?state=failed&sort=-updatedAt&limit=5').then(setFailed),
      ]).catch(setError);
    void load();
    const again = setInterval(() => void load(), 30_000);
    return () => clearInterval(again);
  }, []);
  if (!diag) return error ? <ErrorBox error={error} /> : <p className="muted">Loading…</p>;
  return (
    <div className="dashboard">
      <ErrorBox error={error} />
      <section aria-labelledby="health-title" className={`card ${diag.status}`}>
        <h3 id="health-title">{diag.status === 'ok' ? 'Everything is running' : 'Needs attention'}</h3>
        {diag.problems.length > 0 && (
          <ul>
            {diag.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
        <p className="muted">
          svcmail {diag.versions.product}, Node.js {diag.versions.node}, {diag.versions.datastore.kind} {diag.versions.datastore.version};
          as of {at(diag.generatedAt)}
        </p>
      </section>
      <section aria-labelledby="daemons-title" className="card">
        <h3 id="daemons-title">Daemons</h3>
        <ul className="plain">
          {diag.daemons.map((d) => (
            <li key={d.daemon}>
              <span className={d.alive ? 'dot ok' : 'dot bad'} aria-hidden="true" /> {d.daemon}: {d.alive} running
              {d.processes.length > 0 && (
                <span className="muted"> ({d.processes.map((p) => `${p.host}, seen ${p.ageSeconds} s ago`).join('; ')})</span>
              )}
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="peers-title" className="card">
        <h3 id="peers-title">Scanners and transport</h3>
        <ul className="plain">
          {(
            [
              ['rspamd', diag.scanners.rspamd],
              ['clamd', diag.scanners.clamd],
              [`transport (${diag.transport.provider})`, diag.transport],
            ] as const
          ).map(([name, p]) => (
            <li key={name}>
              <span className={p.reachable ? 'dot ok' : 'dot bad'} aria-hidden="true" /> {name}: {p.reachable ? 'reachable' : 'unreachable'}{' '}
              <span className="muted">
                {p.detail} ({p.ms} ms)
              </span>
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="queues-title" className="card">
        <h3 id="queues-title">Queues</h3>
        <Bars label="Ingest queue by state" values={diag.queues.ingest} />
        <Bars label="Outbound sends by state" values={diag.queues.outbound} />
      </section>
      {counters && (
        <section aria-labelledby="volume-title" className="card">
          <h3 id="volume-title">Mail since the daemons started counting</h3>
          <Bars label="Inbound by outcome" values={counters.deliveries} />
          <Bars label="Scan verdicts" values={counters.verdicts} />
          <Bars label="Outbound by result" values={counters.sends} />
        </section>
      )}
      <section aria-labelledby="failures-title" className="card">
        <h3 id="failures-title">Recent failures</h3>
        {failed.length === 0 ? (
          <p className="muted">No failed deliveries.</p>
        ) : (
          <ul>
            {failed.map((f) => (
              <li key={f.uid}>
                {at(f.updatedAt)} — to {f.recipient}: {f.lastError ?? 'failed'} (<a href="#ingest">ingest queue</a>)
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
