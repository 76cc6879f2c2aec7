// The API from a page: calls with the session cookie (CSRF double submit on writes), the sign-in and
// elevation redirects, and the error the API answered (code, status, message).

const authUrl = () => document.body.dataset.authUrl || '';

/** One detail of an error answer: which field (or recipient) and what is wrong with it. */
export interface FailureDetail {
  path: string;
  message: string;
}

export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly details: FailureDetail[];
  constructor(status: number, body: { message?: string; code?: string; details?: FailureDetail[] } | null) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
    this.details = Array.isArray(body?.details) ? body.details : [];
  }
}

function cookie(name: string): string {
  const hit = document.cookie.split('; ').find((c) => c.startsWith(`${name}=`));
  return hit ? decodeURIComponent(hit.slice(name.length + 1)) : '';
}

/** The CSRF header every write carries (the double-submit cookie's value). */
export const csrfHeader = (): Record<string, string> => ({ 'x-csrf-token': cookie('csrf') });

/** What an answer that is not 2xx means for the page: sign in again, elevate, or the failure to show. */
export async function failureOf(status: number, data: unknown): Promise<ApiFailure> {
  const failure = new ApiFailure(status, data as never);
  // No session, an expired one (401 api-100) or a token this server does not accept (api-101): sign in again.
  if ((status === 401 || failure.code === 'api-101') && authUrl()) await redirectTo('signin');
  if (failure.code === 'api-104' && authUrl()) await redirectTo('elevate');
  return failure;
}

/** Sends the user to the sign-in service (or to elevate) and back to this page. */
export function redirectTo(kind: 'signin' | 'elevate'): Promise<never> {
  const base = authUrl();
  if (base) location.assign(`${base}/auth/${kind}?return_to=${encodeURIComponent(location.href)}`);
  return new Promise(() => {}); // the page is leaving
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is, of this type (iCalendar, vCard), instead of a JSON body. */
  raw?: { body: Blob | string; type: string };
  signal?: AbortSignal;
  /** What the change does, in the user's words: offered again after elevation ("Save the encryption policy"). */
  label?: string;
}

/** sessionStorage key of a change refused for want of elevation, offered again when the page is back (shared/Elevation.tsx). */
export const PENDING_KEY = 'svcmail.pending';

export interface PendingChange {
  label: string;
  method: NonNullable<CallOptions['method']>;
  path: string;
  body?: unknown;
  /** The page and view it was made on (path and #fragment), and when (ms). */
  page: string;
  at: number;
}

export async function api<T = unknown>(path: string, { method = 'GET', body, raw, signal, label }: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (raw) headers['content-type'] = raw.type;
  else if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') Object.assign(headers, csrfHeader());
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: raw ? raw.body : body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (res.ok) return data as T;
  // A change the server wants a fresh elevation for: kept, to be offered again once the user is back.
  if ((data as { code?: string } | null)?.code === 'api-104' && method !== 'GET' && !raw) {
    const pending: PendingChange = {
      label: label ?? `${method} ${path}`,
      method,
      path,
      body,
      page: location.pathname + location.hash,
      at: Date.now(),
    };
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  }
  throw await failureOf(res.status, data);
}

/** A failure the page itself found, worded for the user (what happened and what to do). */
export class Problem extends Error {}

/** What to tell the user about a failure: the API's message and code, the page's own words, else what to do. */
export const describeError = (e: unknown): string =>
  e instanceof ApiFailure
    ? `${e.message}${e.code ? ` (${e.code})` : ''}`
    : e instanceof Problem
      ? e.message
      : 'Something went wrong; reload the page.';

export const when = (d: string | number | Date | null | undefined): string => (d ? new Date(d).toLocaleString() : '');
export const bytes = (n: number): string =>
  n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;

/** How many records a list URL answers (HEAD: X-Total-Count), for lists read page by page. */
export async function countOf(path: string): Promise<number> {
  const res = await fetch(path, { method: 'HEAD', credentials: 'same-origin' });
  return Number(res.headers.get('x-total-count') ?? 0);
}
