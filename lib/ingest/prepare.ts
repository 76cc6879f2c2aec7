import type { ParsedMail } from 'mailparser';
import { fromParsedMail, parseMail, searchDocument, type ParsedMessage } from '../mail/index.js';
import { sanitizeMailHtml } from '../scan/index.js';

/**
 * What delivery needs of a message's bytes, worked out once however many recipients it has: the
 * one MIME parse (HTML sanitized before any client can see it), the stored fields every filed copy
 * carries, and the copies' full-text document, so no copy derives its fields or document from the
 * parse again.
 */
export interface PreparedMail {
  parsed: ParsedMail;
  /** fromParsedMail of parsed (its `mail` is parsed itself). */
  message: ParsedMessage;
  document: string;
}

export async function prepareMail(raw: Buffer): Promise<PreparedMail> {
  const parsed = await parseMail(raw, { skipImageLinks: true, skipTextToHtml: true });
  if (typeof parsed.html === 'string' && parsed.html) parsed.html = sanitizeMailHtml(parsed.html);
  const message = fromParsedMail(parsed, raw);
  return { parsed, message, document: searchDocument(message) };
}
