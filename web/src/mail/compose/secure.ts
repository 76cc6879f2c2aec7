// Drafts and sends of the compose view while the mailbox's keys are unlocked (Spec: What the
// service does, 5): the message is made here as MIME, a draft is encrypted to the sender alone, a
// message that goes out encrypted is signed and encrypted to every recipient's certificate as well,
// and only that ciphertext is stored (POST/PUT compose/encrypted). Attachments stay in the page.
import { api, Problem } from '../../shared/api.js';
import type { UnlockedVault } from '../../crypto/keyring.js';
import type { Composed, LocalFile } from '../../crypto/mime.js';
import { loadMailCrypto } from '../../crypto/use-vault.js';
import type { Mailbox, Message } from '../types.js';
import { parseRecipients } from './addresses.js';
import type { Fields } from './open.js';

/** A sealed save: what the form holds, the files kept in the page, and for the final save the recipients' certificates. */
export interface SealedBody {
  keys: UnlockedVault;
  fields: Fields;
  files: LocalFile[];
  /** The certificates to encrypt to (and sign) for sending; null: a draft, to the sender alone. */
  recipients: string[] | null;
  /** Threading of a reply, kept from the draft the server made. */
  thread: { inReplyTo: string | null; references: string | null; messageId: string };
}

const parties = (field: string) => parseRecipients(field).recipients.map((r) => ({ name: r.name || undefined, address: r.address }));

/** The MIME parts of the form. */
async function composedOf(box: Mailbox, b: SealedBody): Promise<Composed> {
  return {
    from: { name: box.name || undefined, address: b.fields.from },
    to: parties(b.fields.to),
    cc: parties(b.fields.cc),
    bcc: parties(b.fields.bcc),
    subject: b.fields.subject,
    text: b.fields.text,
    html: b.fields.html,
    files: b.files,
    date: new Date(),
    messageId: b.thread.messageId,
    inReplyTo: b.thread.inReplyTo,
    references: b.thread.references,
  };
}

/** The whole message as it is stored: a draft to the sender, or the message to send. */
async function sealed(box: Mailbox, b: SealedBody): Promise<string> {
  const mc = await loadMailCrypto();
  const c = await composedOf(box, b);
  return b.recipients ? mc.sealForSend(c, b.keys, b.recipients) : mc.sealDraft(c, b.keys);
}

const rawOf = (text: string) => ({ body: new Blob([text], { type: 'application/pkcs7-mime' }), type: 'application/pkcs7-mime' });

export const createSealed = async (box: Mailbox, b: SealedBody) =>
  api<Message>(`/api/mail/compose/encrypted?mailboxUid=${encodeURIComponent(box.uid)}`, {
    method: 'POST',
    raw: rawOf(await sealed(box, b)),
  });

export const updateSealed = async (box: Mailbox, d: Message, b: SealedBody) =>
  api<Message>(`/api/mail/compose/${encodeURIComponent(d.uid)}/encrypted?version=${d.version}`, {
    method: 'PUT',
    raw: rawOf(await sealed(box, b)),
  });

/** Threading of a draft (a reply's In-Reply-To and References, as the server set them) and a Message-ID to keep. */
export function threadOf(
  d: (Message & { inReplyTo?: string | null; references?: string[]; messageId?: string | null }) | null,
  from: string,
) {
  const domain = from.slice(from.lastIndexOf('@') + 1) || 'localhost';
  return {
    inReplyTo: d?.inReplyTo ?? null,
    references: d?.references?.length ? d.references.join(' ') : null,
    messageId: d?.messageId ?? `<${crypto.randomUUID()}@${domain}>`,
  };
}

/** A sealed draft read back into the form: decrypted with the sender's key; its files kept in the page. */
export async function openSealedDraft(d: Message, keys: UnlockedVault): Promise<{ fields: Fields; files: LocalFile[] }> {
  const res = await fetch(`/api/mail/messages/${encodeURIComponent(d.uid)}/raw`, { credentials: 'same-origin' });
  if (!res.ok) throw new Problem(`The draft could not be read (HTTP ${res.status}).`);
  const mail = await (await loadMailCrypto()).openMail(await res.text(), keys, { from: d.fromAddress, subject: d.subject });
  const list = (ps: Array<{ name?: string; address: string }>) =>
    ps.map((p) => (p.name ? `${p.name} <${p.address}>` : p.address)).join(', ');
  return {
    fields: {
      from: d.fromAddress,
      to: list(mail.to),
      cc: list(mail.cc),
      bcc: list(d.bcc),
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
    },
    files: mail.files,
  };
}

/** A file the user picked, read into the page. */
export async function localFile(file: File): Promise<LocalFile> {
  return { name: file.name, type: file.type || 'application/octet-stream', bytes: new Uint8Array(await file.arrayBuffer()) };
}
