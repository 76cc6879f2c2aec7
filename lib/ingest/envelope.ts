// Reading the values of an MTA hand-off (Spec: Internal mail hand-off): the envelope headers of
// /internal/mta/deliver and the query values of the lookup routes. Malformed values answer 400
// api-106 naming the header or parameter.
import { isIP } from 'node:net';
import { z } from 'zod';
import { ApiError, invalid } from '../errors/index.js';

/** C0 controls, DEL and C1 controls (Unicode Cc): no address, domain or envelope value has one. */
const CONTROL = /\p{Cc}/u;

/** api-106 naming the header or parameter (path) when a decoded value holds a control character. */
function refuseControls(value: string, path: string, shown: string): void {
  const c = CONTROL.exec(value)?.[0];
  if (c === undefined) return;
  const code = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  throw invalid(
    `${path}: ${shown} holds the control character ${code} (after percent-decoding); addresses and domain names never contain control characters`,
    [{ path, message: `control character ${code}` }],
  );
}

const addressShape = z
  .string()
  .max(320)
  .regex(/^[^\s@<>,]+@[^\s@<>,]+$/);

/** A plain address (local@domain, at most 320 characters), else api-106 naming the header or parameter. */
export function checkAddress(value: string, path: string): string {
  if (!addressShape.safeParse(value).success)
    throw invalid(`${path}: ${value} must be a plain address (local@domain, no spaces, at most 320 characters)`, [
      { path, message: 'must be a plain address' },
    ]);
  return value;
}

/**
 * A comma-separated list of percent-encoded addresses: each decoded, refused when it holds a control
 * character (checked before trimming: a decoded %0D%0A must not be trimmed away), lower-cased.
 */
const addressList = (value: string | undefined, what: string, max: number): string[] => {
  const list = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      let decoded: string;
      try {
        decoded = decodeURIComponent(s);
      } catch {
        throw invalid(`${what}: ${s} is not percent-encoded correctly`, [{ path: what, message: 'bad percent-encoding' }]);
      }
      refuseControls(decoded, what, s);
      return decoded.trim().toLowerCase();
    });
  if (list.length > max) throw invalid(`${what}: more than ${max} recipients`, [{ path: what, message: `more than ${max} addresses` }]);
  return list;
};

/** The SMTP session the MTA received the message in (what rspamd needs for SPF, DKIM, DMARC and IP lists). */
export interface SmtpClient {
  /** The client's IP address. */
  address: string | null;
  /** The name it gave in HELO/EHLO, as given. */
  helo: string | null;
  /** Its reverse-DNS name as the MTA verified it. */
  hostname: string | null;
}

export interface Envelope {
  from: string;
  recipients: string[];
  transactionId?: string;
  client: SmtpClient;
}

/** Postfix writes `unknown` for a value it does not have (a local submission, a failed lookup). */
const absent = (v: string | undefined) => v === undefined || v.trim() === '' || v.trim().toLowerCase() === 'unknown';

const HOSTNAME = /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.?$/i;
/**
 * HELO names are whatever the remote client sent: one that is not printable ASCII without spaces is
 * left out (never a refusal — the sender controls it, and its message must not bounce for it).
 */
const HELO = /^[\x21-\x7e]{1,255}$/;

function decodedOrUndefined(v: string | undefined): string | undefined {
  try {
    return v === undefined ? undefined : decodeURIComponent(v);
  } catch {
    return undefined;
  }
}

/**
 * The SMTP client of a hand-off from X-Envelope-Client-Address, -Helo and -Hostname (Postfix pipe(8):
 * ${client_address}, ${client_helo} percent-encoded, ${client_hostname}); each optional, `unknown` meaning absent.
 * A malformed address or host name (the MTA's own findings) is api-106 naming the header: it means a
 * misconfigured MTA, and a wrong address would silently weaken the scan.
 */
export function smtpClientOf(header: (name: string) => string | undefined): SmtpClient {
  const address = header('x-envelope-client-address');
  const helo = decodedOrUndefined(header('x-envelope-client-helo'));
  const hostname = header('x-envelope-client-hostname');
  const bad = (path: string, message: string) => invalid(`${path}: ${message}`, [{ path, message }]);
  // IPv6 in brackets or with a zone (fe80::1%eth0) is how some MTAs print it; rspamd takes the bare address.
  const ip = absent(address)
    ? null
    : address!
        .trim()
        .replace(/^\[(.*)\]$/, '$1')
        .replace(/^ipv6:/i, '')
        .replace(/%.*$/, '');
  if (ip !== null && !isIP(ip)) throw bad('X-Envelope-Client-Address', 'must be an IPv4 or IPv6 address');
  if (!absent(hostname) && !HOSTNAME.test(hostname!.trim())) throw bad('X-Envelope-Client-Hostname', 'must be a host name');
  return {
    address: ip,
    helo: absent(helo) || !HELO.test(helo!.trim()) ? null : helo!.trim(),
    hostname: absent(hostname) ? null : hostname!.trim().toLowerCase(),
  };
}

/** The envelope of a hand-off from its headers (Spec: Internal mail hand-off); api-106 when malformed. */
export function envelopeOf(header: (name: string) => string | undefined, maxRecipients: number): Envelope {
  const from = addressList(header('x-envelope-from'), 'X-Envelope-From', 1)[0] ?? '';
  const recipients = addressList(header('x-envelope-to'), 'X-Envelope-To', maxRecipients);
  if (!recipients.length)
    throw new ApiError('api-106', 'X-Envelope-To is required (comma-separated, percent-encoded recipients)', {
      details: [{ path: 'X-Envelope-To', message: 'required' }],
    });
  for (const r of recipients) checkAddress(r, 'X-Envelope-To');
  if (from) checkAddress(from, 'X-Envelope-From');
  // Not percent-decoded, and Node's HTTP parser refuses control characters in header values: a value
  // outside this pattern is ignored (the transaction is then the message bytes plus the envelope).
  const txHeader = header('x-transaction-id');
  return {
    from,
    recipients,
    transactionId: txHeader && /^[\w.:@-]{1,200}$/.test(txHeader) ? txHeader : undefined,
    client: smtpClientOf(header),
  };
}

/** A query value of the lookup routes (decoded by the query parser): trimmed, lower-cased, control characters refused. */
export function lookupValue(value: string, path: string): string {
  if (!value.trim()) throw invalid(`${path} (query) is required, once`, [{ path, message: 'required' }]);
  refuseControls(value, path, encodeURIComponent(value));
  return value.trim().toLowerCase();
}
