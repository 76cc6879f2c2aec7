// Shared by the pages: API calls with the session cookie (CSRF double submit on writes), sign-in and
// elevation redirects, and a DOM builder that only ever sets text (never HTML from the server).

const authUrl = document.body.dataset.authUrl || '';

export class ApiFailure extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}

function cookie(name) {
  const hit = document.cookie.split('; ').find((c) => c.startsWith(`${name}=`));
  return hit ? decodeURIComponent(hit.slice(name.length + 1)) : '';
}

/** Sends the user to the sign-in service (or to elevate) and back to this page. */
export function redirectTo(kind) {
  const target = `${authUrl}/auth/${kind}?return_to=${encodeURIComponent(location.href)}`;
  if (authUrl) location.assign(target);
  return new Promise(() => {}); // the page is leaving
}

export async function api(path, { method = 'GET', body } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = cookie('csrf');
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (res.ok) return data;
  const failure = new ApiFailure(res.status, data);
  // No session, an expired one (401 api-100) or a token this server does not accept (api-101): sign in again.
  if ((res.status === 401 || failure.code === 'api-101') && authUrl) await redirectTo('signin');
  if (failure.code === 'api-104' && authUrl) await redirectTo('elevate');
  throw failure;
}

/** h('li', { class: 'x', onclick }, 'text', child): text children become text nodes. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export const root = () => document.getElementById('app');

export function showError(e, where = root()) {
  const text = e instanceof ApiFailure ? `${e.message}${e.code ? ` (${e.code})` : ''}` : 'Something went wrong; reload the page.';
  where.prepend(h('div', { class: 'error', role: 'alert' }, text));
}

export const when = (d) => (d ? new Date(d).toLocaleString() : '');
export const bytes = (n) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

/** Runs a page: its start function gets the app element; an error is shown instead of a blank page. */
export function start(fn) {
  const run = async () => {
    const el = root();
    el.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    try {
      await fn(el);
    } catch (e) {
      el.replaceChildren();
      showError(e, el);
    }
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', run);
  else run();
}
