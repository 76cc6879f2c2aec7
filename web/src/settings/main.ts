// Settings: the caller's mailboxes with their quota use, and data exports (ask, follow, download).
import '../styles/svcmail.css';
import { api, bytes, when } from '../shared/api.js';
import { h, showError, start } from '../shared/dom.js';

interface Mailbox {
  uid: string;
  address: string;
  usedBytes?: number;
  quotaBytes?: number;
}
interface ExportRequest {
  createdAt: string;
  state: string;
  expiresAt: string | null;
  download?: string;
}

function exportSection(b: Mailbox, exports: ExportRequest[]): HTMLElement {
  const ask = h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        try {
          await api('/api/mail/data-export-requests', { method: 'POST', body: { mailboxUid: b.uid } });
          location.reload();
        } catch (e) {
          showError(e, section);
        }
      },
    },
    'Export this mailbox',
  );
  const section = h(
    'section',
    { 'data-mailbox': b.uid },
    h('h2', {}, b.address),
    h('p', {}, `${bytes(b.usedBytes ?? 0)} used${b.quotaBytes ? ` of ${bytes(b.quotaBytes)}` : ''}`),
    h(
      'table',
      {},
      h('tr', {}, h('th', {}, 'Export'), h('th', {}, 'State'), h('th', {}, 'Expires'), h('th', {})),
      exports.map((x) =>
        h(
          'tr',
          {},
          h('td', {}, when(x.createdAt)),
          h('td', {}, x.state),
          h('td', {}, when(x.expiresAt)),
          h('td', {}, x.download ? h('a', { href: x.download }, 'Download') : ''),
        ),
      ),
    ),
    ask,
  );
  return section;
}

start(async (el) => {
  const boxes = await api<Mailbox[]>('/api/mail/mailboxes?limit=100');
  const sections: HTMLElement[] = [];
  for (const b of boxes) {
    const exports = await api<ExportRequest[]>(`/api/mail/data-export-requests?mailboxUid=${encodeURIComponent(b.uid)}&sort=-createdAt`);
    sections.push(exportSection(b, exports));
  }
  el.replaceChildren(...(sections.length ? sections : [h('p', { class: 'notice' }, 'You have no mailbox yet.')]));
});
