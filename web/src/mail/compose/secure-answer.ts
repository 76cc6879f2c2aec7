// Replying to and forwarding an encrypted message (Spec: What the service does, 5): the server cannot
// quote what it cannot read (POST /compose refuses an encrypted original), so the page does: the
// original is decrypted with the unlocked key, quoted as the server quotes plain mail, its files kept
// in the page (or the decrypted message attached whole), and the threading taken from the stored
// message. What comes of it is only ever saved sealed.
import { forwardedMessage, type LocalFile, type Party } from '../../crypto/mime.js';
import type { OpenedMail } from '../../crypto/smime-mail.js';
import { openWithHead } from '../secure-open.js';
import type { Mailbox, Message } from '../types.js';
import { formatRecipients, replyAllRecipients } from './addresses.js';
import { escapeHtml, newFields, textToHtml, type ComposeStart, type Fields } from './open.js';
import { threadOf, type SealedBody } from './secure.js';

type Answer = Exclude<ComposeStart, { kind: 'new' } | { kind: 'draft' }>;

/** The stored message's threading fields (the API record carries them; the list type does not name them). */
type Threaded = Message & { messageId?: string | null; references?: string[] };

const prefixed = (prefix: string, subject: string) =>
  new RegExp(`^${prefix}:`, 'i').test(subject.trim()) ? subject : `${prefix}: ${subject}`;
const fmt = (p: Party | null) => (p ? (p.name ? `${p.name} <${p.address}>` : p.address) : '');
/** Sanitizes decrypted HTML for the editor (crypto/secure-view.ts, loaded with the rest of the S/MIME code). */
type Clean = (html: string) => string;
const bodyHtml = (mail: OpenedMail, clean: Clean) => (mail.html !== null ? clean(mail.html) : textToHtml(mail.text));

/** The quote of a reply: "On <date>, <sender> wrote:" and the text with "> " before each line. */
function replyQuote(of: Message, mail: OpenedMail, clean: Clean): { text: string; html: string } {
  const intro = `On ${new Date(mail.date ?? of.date).toUTCString()}, ${fmt(mail.from ?? of.from)} wrote:`;
  const lines = mail.text.replace(/\r?\n$/, '').split(/\r?\n/);
  return {
    text: `\n\n${intro}\n${lines.map((l) => `> ${l}`).join('\n')}\n`,
    html: `<p>${escapeHtml(intro)}</p><blockquote type="cite">${bodyHtml(mail, clean)}</blockquote>`,
  };
}

/** The quote of an inline forward: the forwarded-message header and the whole text. */
function forwardQuote(of: Message, mail: OpenedMail, clean: Clean): { text: string; html: string } {
  const head = [
    '---------- Forwarded message ---------',
    `From: ${fmt(mail.from ?? of.from)}`,
    `Date: ${new Date(mail.date ?? of.date).toUTCString()}`,
    `Subject: ${mail.subject}`,
    `To: ${(mail.to.length ? mail.to : of.to).map(fmt).join(', ')}`,
  ];
  return {
    text: `\n\n${head.join('\n')}\n\n${mail.text}`,
    html: `<blockquote type="cite">${head.map(escapeHtml).join('<br>')}<br><br>${bodyHtml(mail, clean)}</blockquote>`,
  };
}

/** The decrypted message as a file to forward whole (crypto/mime.ts puts its headers together). */
function messageFile(head: string, mail: OpenedMail): LocalFile {
  const name = `${(mail.subject.replace(/[\\/:*?"<>|\p{Cc}]+/gu, ' ').trim() || 'message').slice(0, 100)}.eml`;
  return { name, type: 'message/rfc822', bytes: new TextEncoder().encode(forwardedMessage(head, mail.entity, mail.subject)) };
}

/** To and Cc of an answer: the decrypted sender (reply), everyone else too (reply all), nobody (forward). */
function recipientsOf(start: Answer, of: Message, mail: OpenedMail, box: Mailbox): { to: string; cc: string } {
  const sender = mail.from ? { name: mail.from.name ?? '', address: mail.from.address } : of.from;
  if (start.kind === 'replyAll') {
    const all = replyAllRecipients({ ...of, from: sender }, [box.address, ...box.aliases]);
    return { to: formatRecipients(all.to), cc: formatRecipients(all.cc) };
  }
  return { to: start.kind === 'reply' && sender ? formatRecipients([sender]) : '', cc: '' };
}

/** The threading of an answer: In-Reply-To for a reply, References for both, a new Message-ID. */
function threadingOf(of: Threaded, answer: boolean, box: Mailbox): SealedBody['thread'] {
  const references = of.messageId ? [...(of.references ?? []), of.messageId].join(' ') : null;
  return { ...threadOf(null, box.address), inReplyTo: answer ? (of.messageId ?? null) : null, references };
}

/** A reply or forward of an encrypted message: the form, the files kept in the page and the threading. */
export async function openSealedAnswer(
  start: Answer,
  box: Mailbox,
  rich: boolean,
): Promise<{ fields: Fields; files: LocalFile[]; thread: SealedBody['thread'] }> {
  const of = start.of as Threaded;
  const [{ mail, head }, { quotableHtml }] = await Promise.all([openWithHead(of), import('../../crypto/secure-view.js')]);
  const base = await newFields(box, rich);
  const answer = start.kind === 'reply' || start.kind === 'replyAll';
  const quote =
    start.kind === 'forwardAttachment' ? null : answer ? replyQuote(of, mail, quotableHtml) : forwardQuote(of, mail, quotableHtml);
  const fields: Fields = {
    ...base,
    ...recipientsOf(start, of, mail, box),
    subject: prefixed(answer ? 'Re' : 'Fwd', mail.subject),
    text: base.text + (quote?.text ?? ''),
    html: base.html === null ? null : base.html + (quote?.html ?? ''),
  };
  const files = start.kind === 'forward' ? mail.files : start.kind === 'forwardAttachment' ? [messageFile(head, mail)] : [];
  return { fields, files, thread: threadingOf(of, answer, box) };
}
