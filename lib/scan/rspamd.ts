import type { Config } from '../config/index.js';

/** What rspamd said about one message (Spec: Inbound message, spam row). */
export interface SpamResult {
  verdict: 'clean' | 'suspect' | 'spam';
  action: string;
  score: number | null;
  symbols: string[];
  /** The scanner could not be reached at all (connection refused, no such host). */
  unreachable?: boolean;
}

/** A message and what the SMTP session said about it (rspamd's protocol headers of the same names). */
export interface SpamInput {
  raw: Buffer;
  /** Envelope sender (From). */
  from?: string;
  /** Envelope recipients (Rcpt). */
  rcpt?: string[];
  /** The SMTP client's address (IP): without it rspamd sees our own loopback address and skips SPF, DMARC and the IP lists. */
  ip?: string;
  /** HELO/EHLO name (Helo). */
  helo?: string;
  /** The client's verified reverse-DNS name (Hostname). */
  hostname?: string;
  /** The MTA's queue id / transaction (Queue-Id): rspamd logs it. */
  queueId?: string;
  /** The authenticated sender of outgoing mail (User): rspamd treats the message as authenticated. */
  user?: string;
}

const SPAM_ACTIONS = new Set(['reject']);
const SUSPECT_ACTIONS = new Set(['add header', 'rewrite subject', 'soft reject']);

export class ScannerUnreachable extends Error {
  constructor(
    readonly scanner: string,
    cause: unknown,
  ) {
    super(`${scanner} cannot be connected to: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'ScannerUnreachable';
  }
}

/** Errors that mean "nothing answered at all", the only case development treats as clean. */
export function isConnectFailure(e: unknown): boolean {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur; i++) {
    const code = (cur as { code?: string }).code;
    if (
      code &&
      ['ECONNREFUSED', 'ENOENT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'].includes(code)
    )
      return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}

/** rspamd over its HTTP protocol: POST /checkv2 with the raw message and envelope headers. */
export async function rspamdCheck(config: Config, input: SpamInput): Promise<SpamResult> {
  const url = `${config.get('mail:scan:rspamd:url').replace(/\/+$/, '')}/checkv2`;
  const headers: Record<string, string> = { 'content-type': 'message/rfc822' };
  if (input.from) headers.From = input.from;
  if (input.ip) headers.IP = input.ip;
  if (input.helo) headers.Helo = input.helo;
  if (input.hostname) headers.Hostname = input.hostname;
  if (input.queueId) headers['Queue-Id'] = input.queueId;
  if (input.user) headers.User = input.user;
  const pw = config.get('mail:scan:rspamd:password');
  if (pw) headers.Password = pw;
  const init: RequestInit & { duplex?: string } = {
    method: 'POST',
    headers,
    body: new Uint8Array(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength),
    redirect: 'error',
    signal: AbortSignal.timeout(config.get('mail:scan:timeout_ms')),
  };
  // rspamd takes repeated Rcpt headers; fetch joins them, so send the first (it is informative only).
  if (input.rcpt?.length) headers.Rcpt = input.rcpt[0];
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (isConnectFailure(e)) throw new ScannerUnreachable('rspamd', e);
    throw e;
  }
  if (!res.ok) throw new Error(`rspamd answered ${res.status}`);
  const body = (await res.json()) as { action?: string; score?: number; symbols?: Record<string, unknown> };
  const action = body.action ?? 'no action';
  const verdict = SPAM_ACTIONS.has(action) ? 'spam' : SUSPECT_ACTIONS.has(action) ? 'suspect' : 'clean';
  return { verdict, action, score: typeof body.score === 'number' ? body.score : null, symbols: Object.keys(body.symbols ?? {}).sort() };
}
