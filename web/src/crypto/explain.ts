// What to tell the user when a crypto step fails: the API's and the page's own words as everywhere,
// the browser's WebAuthn refusals, and the S/MIME code's reasons in plain words (they name no
// internals of the server: they come from this page).
import { ApiFailure, describeError, Problem } from '../shared/api.js';

export function explainCrypto(e: unknown): string {
  if (e instanceof ApiFailure || e instanceof Problem) return describeError(e);
  if (e instanceof DOMException && e.name === 'NotAllowedError')
    return 'The passkey was not used: it was cancelled or timed out. Try again.';
  if (e instanceof DOMException && e.name === 'SecurityError')
    return 'Passkeys cannot be used at this address of the service: open it by its domain name.';
  const m = e instanceof Error ? e.message : '';
  if (/no recipient in this message matches/.test(m))
    return 'It was not encrypted to your current key (were your keys replaced since it came?).';
  if (/unsupported|content type|ephemeral/.test(m)) return `It uses encryption this app cannot open (${m}).`;
  return m ? `${m[0]!.toUpperCase()}${m.slice(1)}.` : describeError(e);
}
