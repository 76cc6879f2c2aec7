// Key escrow console: matters and access requests visible to the caller (escrow officers and
// requesters), with their states. Approving needs the officer's share, unlocked in a client that
// holds it; this page shows where each request stands.
import '../styles/svcmail.css';
import { api, when } from '../shared/api.js';
import { h, start } from '../shared/dom.js';
import { startSession } from '../shared/session.js';

type Row = Record<string, string>;

const table = (head: string[], list: Row[], row: (x: Row) => string[]) =>
  list.length
    ? h(
        'table',
        {},
        h(
          'tr',
          {},
          head.map((x) => h('th', {}, x)),
        ),
        list.map((x) =>
          h(
            'tr',
            {},
            row(x).map((c) => h('td', {}, c)),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'None.');

start(async (el) => {
  const [matters, requests] = await Promise.all([
    api<Row[]>('/api/escrow/matters?limit=200&sort=-createdAt'),
    api<Row[]>('/api/escrow/access-requests?limit=200&sort=-createdAt'),
  ]);
  el.replaceChildren(
    h(
      'section',
      {},
      h('h2', {}, 'Matters'),
      table(['Name', 'State', 'Period', 'Opened'], matters, (m) => [m.name, m.state, `${when(m.from)} – ${when(m.to)}`, when(m.createdAt)]),
    ),
    h(
      'section',
      {},
      h('h2', {}, 'Access requests'),
      table(['Reason', 'Requester', 'State', 'Asked'], requests, (r) => [r.reason, r.requester, r.state, when(r.createdAt)]),
    ),
  );
});

startSession();
