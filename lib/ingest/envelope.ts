// Reading the values of an MTA hand-off (Spec: Internal mail hand-off): the envelope headers of
// /internal/mta/deliver and the query values of the lookup routes. Malformed values answer 400
// api-106 naming the header or parameter.
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

export interface Envelope {
  from: string;
  recipients: string[];
  transactionId?: string;
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
  return { from, recipients, transactionId: txHeader && /^[\w.:@-]{1,200}$/.test(txHeader) ? txHeader : undefined };
}

/** A query value of the lookup routes (decoded by the query parser): trimmed, lower-cased, control characters refused. */
export function lookupValue(value: string, path: string): string {
  if (!value.trim()) throw invalid(`${path} (query) is required, once`, [{ path, message: 'required' }]);
  refuseControls(value, path, encodeURIComponent(value));
  return value.trim().toLowerCase();
}
