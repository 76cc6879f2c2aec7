// Administration console: diagnostics and branding. Both need a trusted role with fresh elevation;
// the API answers 403 api-104 without it and the page sends the administrator to elevate.
import '../styles/svcmail.css';
import { api, when } from '../shared/api.js';
import { h, showError, start } from '../shared/dom.js';
import { startSession } from '../shared/session.js';

type Branding = Record<string, string | null>;
const FIELDS: Array<[key: string, label: string, type: string]> = [
  ['name', 'Product name', 'text'],
  ['logo', 'Logo (https:// or data:image URL)', 'text'],
  ['primaryColor', 'Primary colour', 'color'],
  ['accentColor', 'Accent colour', 'color'],
  ['backgroundColor', 'Background', 'color'],
  ['textColor', 'Text colour', 'color'],
];
const long = (c: string | null) => (c && /^#[0-9a-f]{3}$/i.test(c) ? `#${[...c.slice(1)].map((x) => x + x).join('')}` : (c ?? ''));

function diagnosticsRows(diag: unknown): HTMLElement[] {
  const rows: HTMLElement[] = [];
  const walk = (prefix: string, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    else rows.push(h('tr', {}, h('th', {}, prefix), h('td', {}, Array.isArray(v) ? JSON.stringify(v) : String(v))));
  };
  walk('', diag);
  return rows;
}

function brandingForm(brand: Branding): HTMLElement {
  const inputs = Object.fromEntries(
    FIELDS.map(([k, , type]) => [
      k,
      h('input', { name: k, type, value: type === 'color' ? long(brand[k]) : (brand[k] ?? '') }) as HTMLInputElement,
    ]),
  );
  const form = h(
    'form',
    {
      class: 'stack',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const body = Object.fromEntries(FIELDS.map(([k]) => [k, inputs[k].value.trim() || (k === 'logo' ? null : inputs[k].value)]));
        try {
          await api('/api/system/branding', { method: 'PUT', body });
          location.reload();
        } catch (err) {
          showError(err, form);
        }
      },
    },
    FIELDS.map(([k, label]) => h('label', {}, label, ' ', inputs[k])),
    h('button', { type: 'submit' }, 'Save branding'),
  );
  return form;
}

start(async (el) => {
  const [diag, brand] = await Promise.all([api('/api/admin/diagnostics'), api<Branding>('/api/system/branding')]);
  el.replaceChildren(
    h(
      'section',
      {},
      h('h2', {}, 'Diagnostics'),
      h('p', { class: 'muted' }, `As of ${when(new Date())}`),
      h('table', {}, diagnosticsRows(diag)),
    ),
    h('section', {}, h('h2', {}, 'Branding'), brandingForm(brand)),
  );
});

startSession();
