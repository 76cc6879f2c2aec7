// S/MIME messages in the browser (Spec: What the service does, 5): opening one (decrypt with the
// unlocked key, verify the signature, read the MIME with postal-mime) and sealing one (sign with the
// signing certificate when there is one, encrypt to every recipient and to the sender). The server
// only ever gets what sealForSend and sealDraft return. Loaded on first use.
import PostalMime, { type Address, type Email } from 'postal-mime';
import { decryptAndVerify, encryptAndSign, encryptEntity, parseCertificate, type SignatureInfo } from '../../../lib/keys/client/index.js';
import type { UnlockedVault } from './keyring.js';
import { innerEntity, outerMessage, type Composed, type LocalFile, type Party } from './mime.js';

export interface SignatureView {
  /** The signature verifies: the content is as it was signed. */
  valid: boolean;
  /** The signer's certificate chains to a certificate authority of this service. */
  trusted: boolean;
  signer: string;
  signerEmails: string[];
  notBefore: Date | null;
  notAfter: Date | null;
  /** The certificate was valid at this moment. */
  current: boolean;
  /** The certificate names the message's From address. */
  matchesFrom: boolean;
  problem: string | null;
}

export interface OpenedMail {
  encrypted: boolean;
  signature: SignatureView | null;
  subject: string;
  from: Party | null;
  to: Party[];
  cc: Party[];
  date: string | null;
  text: string;
  html: string | null;
  files: LocalFile[];
  /** The innermost MIME entity (decrypted, signature removed): what a forward as attachment carries. */
  entity: string;
}

const parties = (list: Address[] | undefined): Party[] =>
  (list ?? []).flatMap((a) => (a.group ? a.group : [a])).map((m) => ({ name: m.name || undefined, address: m.address.toLowerCase() }));

const cnOf = (s: SignatureInfo): string => {
  const cn = s.signerCertificate?.subject.typesAndValues.find((t) => t.type === '2.5.4.3');
  return cn ? String(cn.value.valueBlock.value) : (s.signerEmails[0] ?? 'unknown signer');
};

function signatureView(s: SignatureInfo, fromAddress: string): SignatureView {
  const cert = s.signerCertificate;
  const notBefore = cert?.notBefore.value ?? null;
  const notAfter = cert?.notAfter.value ?? null;
  const now = Date.now();
  return {
    valid: s.valid,
    trusted: s.trusted,
    signer: cnOf(s),
    signerEmails: s.signerEmails,
    notBefore,
    notAfter,
    current: Boolean(notBefore && notAfter && notBefore.getTime() <= now && now <= notAfter.getTime()),
    matchesFrom: s.signerEmails.includes(fromAddress.toLowerCase()),
    problem: s.problem,
  };
}

const bytesOf = (c: ArrayBuffer | Uint8Array | string): Uint8Array =>
  typeof c === 'string' ? new TextEncoder().encode(c) : c instanceof Uint8Array ? c : new Uint8Array(c);

function mailOf(email: Email): Omit<OpenedMail, 'encrypted' | 'signature' | 'entity'> {
  const from = parties(email.from ? [email.from] : [])[0] ?? null;
  return {
    subject: email.subject ?? '',
    from,
    to: parties(email.to),
    cc: parties(email.cc),
    date: email.date ?? null,
    text: email.text ?? '',
    html: email.html ?? null,
    files: email.attachments.map((a, i) => ({
      name: a.filename || `attachment-${i + 1}`,
      type: a.mimeType || 'application/octet-stream',
      bytes: bytesOf(a.content),
    })),
  };
}

/**
 * Opens an S/MIME message (its raw source): decrypted with the mailbox's key when enveloped, its
 * signature checked against the service's CAs (a signature that does not verify is reported, not
 * thrown: the view flags it). `outerOf`: the stored message's From (which the signer must match) and Subject, or its From alone.
 */
/** Runs `step` under a User Timing measure (svcmail:<name>), which the benchmarks read from the page. */
async function timed<T>(name: string, step: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await step();
  } finally {
    performance.measure(`svcmail:${name}`, { start, end: performance.now() });
  }
}

export function openMail(
  raw: string,
  keys: UnlockedVault | null,
  outerOf: string | { from: string; subject: string },
  trusted: string[] = keys?.caCertificates ?? [],
): Promise<OpenedMail> {
  return timed('open', () => openUntimed(raw, keys, outerOf, trusted));
}

async function openUntimed(
  raw: string,
  keys: UnlockedVault | null,
  outerOf: string | { from: string; subject: string },
  trusted: string[] = keys?.caCertificates ?? [],
): Promise<OpenedMail> {
  const outer = typeof outerOf === 'string' ? { from: outerOf, subject: '' } : outerOf;
  const opened = await decryptAndVerify(
    raw,
    keys ? { certPem: keys.encryptionCertificate, key: keys.encryptionKey as never } : null,
    trusted,
    { keepBadSignature: true },
  );
  const mail = mailOf(await PostalMime.parse(opened.entity));
  // A signed (not encrypted) message signs its body only: its Subject and From are the outer ones.
  mail.subject ||= outer.subject;
  const fromAddress = mail.from?.address ?? outer.from;
  return {
    ...mail,
    entity: opened.entity,
    encrypted: opened.encrypted,
    signature: opened.signature && signatureView(opened.signature, fromAddress),
  };
}

/** A draft as stored while it is written: encrypted to the sender alone, not signed. */
export function sealDraft(c: Composed, keys: UnlockedVault): Promise<string> {
  return timed('seal-draft', async () => outerMessage(c, await encryptEntity(innerEntity(c), [keys.encryptionCertificate])));
}

/** The message as sent: signed (when a signing certificate is installed) and encrypted to each recipient's certificate and the sender's. */
export function sealForSend(c: Composed, keys: UnlockedVault, recipientCerts: string[]): Promise<string> {
  const to = [...recipientCerts, keys.encryptionCertificate];
  return timed('seal-send', async () => {
    const inner = innerEntity(c);
    if (!keys.signingCertificate) return outerMessage(c, await encryptEntity(inner, to));
    return outerMessage(c, await encryptAndSign(inner, { certPem: keys.signingCertificate, key: keys.signingKey as never }, to));
  });
}

/** Fingerprint-free description of a certificate for the compose view ("valid until …"). */
export function certificateUntil(pem: string): Date {
  return parseCertificate(pem).notAfter.value;
}
