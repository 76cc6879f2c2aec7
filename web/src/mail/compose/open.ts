// Opening the compose view: a new message (nothing saved until the user writes; the default
// signature put in the form), a reply or forward (saved at once: the server quotes the original,
// threads and signs it), or a draft from Drafts, read back into the form.
import { api } from '../../shared/api.js';
import type { Mailbox, Message, MessageBody } from '../types.js';
import { formatRecipients, replyAllRecipients } from './addresses.js';

export type ComposeStart =
  { kind: 'new' } | { kind: 'reply' | 'replyAll' | 'forward' | 'forwardAttachment'; of: Message } | { kind: 'draft'; draft: Message };

/** What the form holds; addresses as typed. */
export interface Fields {
  from: string;
  to: string;
  cc: string;
  bcc: string;
  subject: string;
  text: string;
  /** null: plain text. */
  html: string | null;
}

interface Signature {
  text: string;
  html: string;
}

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Plain text as the HTML a rich editor starts from. */
export const textToHtml = (text: string): string => escapeHtml(text).replace(/\n/g, '<br>');

/** The form of a saved draft, read back from the server, in the format it was written in. */
async function fieldsOf(d: Message): Promise<Fields> {
  const body = await api<MessageBody>(`/api/mail/messages/${encodeURIComponent(d.uid)}/body`);
  const text = body.text ?? '';
  return {
    from: d.fromAddress,
    to: formatRecipients(d.to),
    cc: formatRecipients(d.cc),
    bcc: formatRecipients(d.bcc),
    subject: d.subject,
    text,
    html: body.html,
  };
}

/** A new message's form: empty, with the mailbox's default signature below a blank line. */
export async function newFields(box: Mailbox, rich: boolean): Promise<Fields> {
  const [sig] = await api<Signature[]>(`/api/mail/mail-signatures?mailboxUid=${encodeURIComponent(box.uid)}&isDefault=true&limit=1`);
  const text = sig ? `\n\n-- \n${sig.text}` : '';
  const html = sig ? `<p><br></p><div class="signature">${sig.html || textToHtml(sig.text)}</div>` : '';
  return { from: box.address, to: '', cc: '', bcc: '', subject: '', text, html: rich ? html : null };
}

/** The compose view's starting point: the saved draft (none yet for a new message) and the form. */
export async function openCompose(start: ComposeStart, box: Mailbox, rich: boolean): Promise<{ draft: Message | null; fields: Fields }> {
  if (start.kind === 'new') return { draft: null, fields: await newFields(box, rich) };
  if (start.kind === 'draft') return { draft: start.draft, fields: await fieldsOf(start.draft) };
  const { of } = start;
  const own = [box.address, ...box.aliases];
  const answer = start.kind === 'reply' || start.kind === 'replyAll';
  const all = start.kind === 'replyAll' ? replyAllRecipients(of, own) : null;
  const draft = await api<Message>('/api/mail/compose', {
    method: 'POST',
    body: {
      mailboxUid: box.uid,
      ...(answer ? { replyTo: of.uid } : { forwardOf: of.uid, forwardAs: start.kind === 'forward' ? 'inline' : 'attachment' }),
      ...(all ? { to: all.to, cc: all.cc } : {}),
      html: rich ? '' : null,
      signature: true,
    },
  });
  return { draft, fields: await fieldsOf(draft) };
}
