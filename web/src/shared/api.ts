// The API from a page: calls with the session cookie (CSRF double submit on writes), the sign-in and
// elevation redirects, and the error the API answered (code, status, message).

const authUrl = () => document.body.dataset.authUrl || '';

export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string | undefined;
  constructor(status: number, body: { message?: string; code?: string } | null) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
  }
}

function cookie(name: string): string {
  const hit = document.cookie.split('; ').find((c) => c.startsWith(`${name}=`));
  return hit ? decodeURIComponent(hit.slice(name.length + 1)) : '';
}

/** Sends the user to the sign-in service (or to elevate) and back to this page. */
export function redirectTo(kind: 'signin' | 'elevate'): Promise<never> {
  const base = authUrl();
  if (base) location.assign(`${base}/auth/${kind}?return_to=${encodeURIComponent(location.href)}`);
  return new Promise(() => {}); // the page is leaving
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  signal?: AbortSignal;
}

export async function api<T = unknown>(path: string, { method = 'GET', body, signal }: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = cookie('csrf');
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (res.ok) return data as T;
  const failure = new ApiFailure(res.status, data);
  // No session, an expired one (401 api-100) or a token this server does not accept (api-101): sign in again.
  if ((res.status === 401 || failure.code === 'api-101') && authUrl()) await redirectTo('signin');
  if (failure.code === 'api-104' && authUrl()) await redirectTo('elevate');
  throw failure;
}

/** What to tell the user about a failure: the API's message and code, else what to do. */
export const describeError = (e: unknown): string =>
  e instanceof ApiFailure ? `${e.message}${e.code ? ` (${e.code})` : ''}` : 'Something went wrong; reload the page.';

export const when = (d: string | number | Date | null | undefined): string => (d ? new Date(d).toLocaleString() : '');
export const bytes = (n: number): string =>
  n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
