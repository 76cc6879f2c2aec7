import type { CheckedItem } from './check.js';

// Spec: a domain has enabled and verified flags; only enabled, verified domains accept mail
// (GET /internal/mta/domain). A domain is verified once its MX record points at this server: from
// then on inbound mail can reach us. SPF, DKIM, DMARC, _svc and autodiscover are reported with
// their fix but do not hold verification back (they matter for sending and clients, not receiving).

export interface DomainVerdict {
  domain: string;
  verified: boolean;
  /** This check verified it (it was not before). */
  changed: boolean;
  /** Records that are not present, with their fix; mx among them keeps the domain unverified. */
  missing: Array<{ purpose: string; status: string; record: string; fix: string }>;
}

/** The records a check found missing or wrong for each domain, and whether its MX lets it be verified. */
export function verdicts(checked: readonly CheckedItem[], verified: ReadonlyMap<string, boolean>): DomainVerdict[] {
  const domains = [...new Set(checked.map((i) => i.domain))];
  return domains.map((domain) => {
    const items = checked.filter((i) => i.domain === domain);
    const missing = items
      .filter((i) => i.status !== 'present')
      .map((i) => ({ purpose: i.purpose, status: i.status, record: i.record, fix: i.fix ?? `add: ${i.record}` }));
    const mxHere = items.some((i) => i.purpose === 'mx' && i.status === 'present');
    return { domain, verified: Boolean(verified.get(domain)) || mxHere, changed: !verified.get(domain) && mxHere, missing };
  });
}

/** One line per domain for people: verified, or what still keeps its mail out. */
export function describeVerdicts(list: readonly DomainVerdict[]): string[] {
  return list.map((v) => {
    if (v.changed) return `${v.domain}: verified now (its MX points here): inbound mail is accepted`;
    if (v.verified) return `${v.domain}: verified`;
    const mx = v.missing.find((m) => m.purpose === 'mx');
    return `${v.domain}: NOT verified, inbound mail is refused until its MX record points here (${mx?.fix ?? 'add the MX record'}); on a closed network: svcmail admin domains verify ${v.domain} --force`;
  });
}
