// The DNS records a domain served here needs (Spec: Other shapes — the _svc TXT record; Autodiscover
// plugin — autodiscover CNAME / _autodiscover._tcp SRV; Limits — DKIM selector). Pure: no lookups.

export type RecordType = 'MX' | 'TXT' | 'CNAME' | 'SRV';

/** What a record is for. */
export const RECORD_PURPOSES = ['mx', 'spf', 'dkim', 'dmarc', 'svc', 'autodiscover-cname', 'autodiscover-srv'] as const;
export type RecordPurpose = (typeof RECORD_PURPOSES)[number];

export interface ChecklistItem {
  /** What the record is for: mx, spf, dkim, dmarc, svc, autodiscover-cname, autodiscover-srv. */
  purpose: RecordPurpose;
  domain: string;
  type: RecordType;
  /** Fully qualified name without the trailing dot. */
  name: string;
  /** The value to publish, as a zone file writes it (TXT without quotes). */
  value: string;
  /** The exact line to add to a zone file. */
  record: string;
  note: string;
}

export interface DomainDnsInput {
  domain: string;
  host: string;
  serverId: string;
  dkimSelector: string;
  /** Base64 SubjectPublicKeyInfo (the p= tag); null when no key was generated. */
  dkimPublicKey: string | null;
}

const TTL = 3600;

export function zoneLine(type: RecordType, name: string, value: string): string {
  const v =
    type === 'TXT'
      ? txtChunks(value)
          .map((c) => `"${c}"`)
          .join(' ')
      : value;
  return `${name}. ${TTL} IN ${type} ${v}`;
}

/** TXT strings are at most 255 bytes each; long values (DKIM keys) are split. */
export function txtChunks(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < value.length; i += 255) out.push(value.slice(i, i + 255));
  return out.length ? out : [''];
}

/** A PEM public key (or bare base64) → the base64 body for the DKIM p= tag. */
export function dkimKeyData(publicKey: string): string {
  return publicKey.replace(/-----(BEGIN|END) [A-Z ]+-----/g, '').replace(/\s+/g, '');
}

export function svcTxt(serverId: string, host: string): string {
  return `v=SVCv1; id=${serverId}; host=${host};`;
}

export function checklistFor(input: DomainDnsInput): ChecklistItem[] {
  const { domain, host } = input;
  const item = (purpose: RecordPurpose, type: RecordType, name: string, value: string, note: string): ChecklistItem => ({
    purpose,
    domain,
    type,
    name,
    value,
    record: zoneLine(type, name, value),
    note,
  });
  const items = [
    item('mx', 'MX', domain, `10 ${host}.`, 'mail for the domain goes to this host'),
    item('spf', 'TXT', domain, 'v=spf1 mx -all', 'only the MX hosts send for the domain (merge into an existing v=spf1 record)'),
  ];
  if (input.dkimPublicKey) {
    items.push(
      item(
        'dkim',
        'TXT',
        `${input.dkimSelector}._domainkey.${domain}`,
        `v=DKIM1; k=rsa; p=${dkimKeyData(input.dkimPublicKey)}`,
        'public half of the DKIM signing key',
      ),
    );
  }
  items.push(
    item(
      'dmarc',
      'TXT',
      `_dmarc.${domain}`,
      `v=DMARC1; p=quarantine; rua=mailto:postmaster@${domain}`,
      'receivers quarantine mail failing SPF and DKIM',
    ),
    item('svc', 'TXT', `_svc.${domain}`, svcTxt(input.serverId, host), 'clients and other servers find this server from an address'),
    item('autodiscover-cname', 'CNAME', `autodiscover.${domain}`, `${host}.`, 'mail clients find the autodiscover service'),
    item('autodiscover-srv', 'SRV', `_autodiscover._tcp.${domain}`, `0 0 443 ${host}.`, 'autodiscover for clients that try SRV'),
  );
  return items;
}
