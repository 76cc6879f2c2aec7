import type { Config } from '../config/index.js';
import { bareAddress, domainOf, headerValue, headerValues, type HeaderBlock } from './headers.js';

export interface SenderVerification {
  verified: boolean;
  /** Domains whose DKIM signature passed, per the trusted Authentication-Results header. */
  dkimDomains: string[];
  fromAddress: string;
}

/**
 * Spec: Trusting sender verification. Only the Authentication-Results header whose authserv-id
 * equals mail:security:trusted_authserv_id counts; with that setting empty nobody is verified.
 * The sender is verified when DKIM passed for the From domain (or a parent of it) or DMARC passed.
 */
export function verifySender(config: Config, h: HeaderBlock): SenderVerification {
  const trusted = config.get('mail:security:trusted_authserv_id').trim().toLowerCase();
  const fromAddress = bareAddress(headerValue(h, 'from'));
  const none = { verified: false, dkimDomains: [], fromAddress };
  if (!trusted) return none;
  const fromDomain = domainOf(fromAddress);
  const dkimDomains: string[] = [];
  let dmarcPass = false;
  for (const value of headerValues(h, 'authentication-results')) {
    const cleaned = value.replace(/\([^)]*\)/g, ' ');
    const [id, ...rest] = cleaned.split(';');
    if (id.trim().split(/\s+/)[0]?.toLowerCase() !== trusted) continue;
    for (const part of rest) {
      const m = /^\s*(dkim|dmarc)\s*=\s*(\w+)/i.exec(part);
      if (!m || m[2].toLowerCase() !== 'pass') continue;
      if (m[1].toLowerCase() === 'dmarc') {
        const hf = /header\.from\s*=\s*([^\s;]+)/i.exec(part);
        if (!hf || hf[1].toLowerCase() === fromDomain) dmarcPass = true;
      } else {
        const d = /header\.(?:d|i)\s*=\s*@?([^\s;]+)/i.exec(part);
        if (d) dkimDomains.push(domainOf(d[1].toLowerCase()));
      }
    }
  }
  const aligned = dkimDomains.some((d) => fromDomain === d || fromDomain.endsWith(`.${d}`));
  return { verified: Boolean(fromAddress) && (aligned || dmarcPass), dkimDomains, fromAddress };
}
