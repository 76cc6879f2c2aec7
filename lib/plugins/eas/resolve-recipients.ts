import type { PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { kid, kids, textOf, wbxml } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// ResolveRecipients (MS-ASCMD 2.2.1.15): what a device asks while the user types a recipient — the
// directory's matches for each name or address, and, for S/MIME, each recipient's encryption
// certificate from key lookup (local vault or a federated server), as compose in the web app uses.

const rr = ns('ResolveRecipients');

/** ResolveRecipients Status values: overall, per To, per Certificates. */
const STATUS = { ok: 1, protocol: 5, server: 6 } as const;
const TO = { one: 1, ambiguous: 2, ambiguousPartial: 3, none: 4 } as const;
const CERTS = { ok: 1, none: 7, limit: 8 } as const;
const MAX_TO = 100;

/** DER of the first certificate of a PEM text, base64 (what a device puts in its S/MIME keychain). */
const derOf = (pem: string) => /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(pem)?.[1].replace(/\s+/g, '') ?? '';

async function certificates(r: EasRequest, address: string, retrieval: number, max: number): Promise<WbxmlElement[]> {
  if (retrieval < 2) return [];
  const pem = await r.caller.encryptionCertificate(r.mailboxUid, address);
  if (!pem) return [rr('Certificates', [rr('Status', CERTS.none), rr('CertificateCount', 0), rr('RecipientCount', 0)])];
  if (max < 1) return [rr('Certificates', [rr('Status', CERTS.limit), rr('CertificateCount', 0), rr('RecipientCount', 1)])];
  // Full and mini certificates alike: a mini certificate (retrieval 3) is a subset the device can do without.
  return [rr('Certificates', [rr('Status', CERTS.ok), rr('CertificateCount', 1), rr('RecipientCount', 1), rr('Certificate', derOf(pem))])];
}

async function resolveOne(r: EasRequest, to: string, options: WbxmlElement | undefined): Promise<WbxmlElement> {
  const maxAmbiguous = Math.min(Number(textOf(options, 'MaxAmbiguousRecipients') ?? 19) || 19, 100);
  const retrieval = Number(textOf(options, 'CertificateRetrieval') ?? 1) || 1;
  const maxCerts = Number(textOf(options, 'MaxCertificates') ?? 9999);
  const wanted = to.trim().toLowerCase();
  const found = wanted ? await r.caller.directory(wanted, maxAmbiguous + 1) : [];
  const exact = found.filter((e) => e.address === wanted);
  const matches = exact.length ? exact : found.slice(0, maxAmbiguous);
  const status = !matches.length
    ? TO.none
    : matches.length === 1
      ? TO.one
      : found.length > maxAmbiguous
        ? TO.ambiguousPartial
        : TO.ambiguous;
  const recipients: WbxmlElement[] = [];
  for (const e of matches)
    recipients.push(
      rr('Recipient', [
        rr('Type', 1), // from the global address list
        rr('DisplayName', e.name || e.address),
        rr('EmailAddress', e.address),
        ...(matches.length === 1 ? await certificates(r, e.address, retrieval, maxCerts) : []),
      ]),
    );
  return rr('Response', [rr('To', to), rr('Status', status), rr('RecipientCount', matches.length), ...recipients]);
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const tos = kids(r.body ?? undefined, 'To').map((t) => t.text ?? '');
  if (!tos.length || tos.length > MAX_TO) return wbxml(rr('ResolveRecipients', [rr('Status', STATUS.protocol)]));
  const options = kid(r.body ?? undefined, 'Options');
  const out: WbxmlElement[] = [];
  for (const to of tos) out.push(await resolveOne(r, to, options));
  return wbxml(rr('ResolveRecipients', [rr('Status', STATUS.ok), ...out]));
}

export const resolveRecipients: EasCommand = { root: { page: 'ResolveRecipients', tag: 'ResolveRecipients' }, handle };
