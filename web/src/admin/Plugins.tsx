import { api } from '../shared/api.js';
import { at, Table } from '../shared/RecordTable.js';
import { Outcome, useAnswer } from '../shared/outcome.js';

/** One installed plugin as GET /api/system/plugins answers it (lib/plugins/admin.ts, pluginView). */
export interface Plugin {
  name: string;
  version: string;
  summary: string;
  /** The stored state; a plugin never switched is enabled. */
  enabled: boolean;
  changedBy: string | null;
  changedAt: string | null;
  routes: Array<{ method: string; path: string; daemon: 'api' | 'protocols'; auth: string }>;
  /** What Autodiscover advertises while the plugin is enabled. */
  protocols: string[];
  settings: Array<{ name: string; doc: string }>;
}

/** The routes a plugin adds, each with the daemon serving it and the access it needs. */
function Routes({ p }: { p: Plugin }) {
  if (!p.routes.length) return <>—</>;
  return (
    <details>
      <summary>
        {p.routes.length} route{p.routes.length === 1 ? '' : 's'}
      </summary>
      <ul className="plain">
        {p.routes.map((r) => (
          <li key={`${r.method} ${r.path}`}>
            <code>
              {r.method} {r.path}
            </code>{' '}
            <span className="muted">
              ({r.daemon} daemon, {r.auth})
            </span>
          </li>
        ))}
      </ul>
    </details>
  );
}

/** The configuration settings a plugin reads, with what each does. */
function Settings({ p }: { p: Plugin }) {
  if (!p.settings.length) return <>—</>;
  return (
    <details>
      <summary>
        {p.settings.length} setting{p.settings.length === 1 ? '' : 's'}
      </summary>
      <dl>
        {p.settings.map((s) => (
          <div key={s.name}>
            <dt>
              <code>{s.name}</code>
            </dt>
            <dd>{s.doc}</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}

/** Enabled or disabled, and who switched it last and when. */
const stateOf = (p: Plugin) =>
  `${p.enabled ? 'Enabled' : 'Disabled'}${p.changedBy ? ` (by ${p.changedBy}, ${at(p.changedAt)})` : p.changedAt ? ` (${at(p.changedAt)})` : ''}`;

/** The installed plugins, each with its routes, protocols and settings, and the switch that enables or disables it. */
export default function Plugins() {
  const { data, error, told, run } = useAnswer<Plugin[]>('/api/system/plugins');
  const toggle = (p: Plugin) => {
    const verb = p.enabled ? 'Disable' : 'Enable';
    // Disabling cuts off every client of the plugin at once: ask first. Enabling has no such cost.
    if (p.enabled && !confirm(`Disable ${p.name}? Its routes answer 404 and Autodiscover stops advertising its protocols.`)) return;
    void run(
      () =>
        api(`/api/system/plugins/${encodeURIComponent(p.name)}`, {
          method: 'PUT',
          body: { enabled: !p.enabled },
          label: `${verb} the plugin ${p.name}`,
        }),
      `${p.name} ${p.enabled ? 'disabled' : 'enabled'}.`,
    );
  };
  return (
    <>
      <p className="muted">
        A disabled plugin&apos;s routes answer 404 in every daemon copy and Autodiscover stops advertising its protocols. Switching is
        audited; nothing the plugin stored is deleted.
      </p>
      <Outcome error={error} told={told} />
      <Table<Plugin>
        label="Plugins"
        rows={data}
        keyOf={(p) => p.name}
        empty="No plugin is installed."
        columns={[
          {
            label: 'Plugin',
            cell: (p) => (
              <>
                {p.name}
                <div className="muted">{p.summary}</div>
              </>
            ),
          },
          { label: 'Version', cell: (p) => p.version },
          { label: 'State', cell: stateOf },
          { label: 'Protocols', cell: (p) => p.protocols.join(', ') || '—' },
          { label: 'Routes', cell: (p) => <Routes p={p} /> },
          { label: 'Settings', cell: (p) => <Settings p={p} /> },
        ]}
        actions={(p) => (
          <button type="button" className="secondary" onClick={() => toggle(p)}>
            {p.enabled ? 'Disable' : 'Enable'}
          </button>
        )}
      />
    </>
  );
}
