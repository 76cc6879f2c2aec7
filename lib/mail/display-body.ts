import type { MimeNode, SplitterChunk } from '@zone-eu/mailsplit';
import type { Readable, Transform } from 'node:stream';
import { noNul, withinParseLimit } from './messages.js';
import { bodyReaders, mailparser, type BodyReaders } from './mime-parser.js';

// The text and HTML a message shows, for readers of many messages at once (mobile sync reads a
// page of bodies per round). mailparser's simpleParser also parses every header of every part
// (address lists, encoded words, dates) and yields to the event loop after every chunk — about two
// thirds of its time on a typical message, none of it needed for the body. Here the same splitter
// mailparser is built on (mailsplit) walks the parts, and each text part is decoded as mailparser
// decodes it: transfer encoding, format=flowed, charset through libmime. The parts are joined by
// mailparser's rules (getTextContent with skipTextToHtml), so the result is the text and HTML
// parseMessage stores: test/unit/mail/display-body.test.ts compares every corpus message and the
// MIME fuzz target compares every input. Two cases are left to mailparser itself: an embedded
// message (mailparser writes its From/Subject/Date lines into the text) and HTML a text reader
// needs converted to text (html-to-text with mailparser's limits).

/** The body types mailparser reads as text when they are not attachments. */
const TEXT_TYPES = ['text/plain', 'text/html', 'message/delivery-status'];
const ASCII_OR_UTF8 = ['ascii', 'usascii', 'utf8'];

export interface DisplayBody {
  text: string | null;
  html: string | null;
}

interface TextPart {
  contentType: string;
  /** Inside a multipart/alternative: its text is not turned into HTML and its HTML not into text. */
  alternative: boolean;
  root: boolean;
  content: Promise<string>;
  decoder: Transform;
}

/**
 * The text and HTML (unsanitized) of a raw message for display; `want` 'html': a reader of HTML,
 * for whom an HTML-only message's text is not made.
 */
export function displayBody(raw: Buffer, want: 'text' | 'html'): Promise<DisplayBody> {
  return withinParseLimit(raw, async () => {
    const parts = await split(await bodyReaders(), raw);
    return (parts && (await join(parts, want))) ?? displayBodyByMailparser(raw, want);
  });
}

/** The inline text parts in order, each decoding as it arrives; null when an embedded message needs mailparser. */
function split(readers: BodyReaders, raw: Buffer): Promise<TextPart[] | null> {
  return new Promise((resolve, reject) => {
    // mailsplit's types declare only its 'data' event; it is a Transform like any other.
    const splitter = new readers.Splitter() as unknown as Transform;
    const parts: TextPart[] = [];
    let current: TextPart | null = null;
    let embedded = false;
    splitter.on('data', (chunk: SplitterChunk) => {
      if (chunk.type === 'node') {
        current?.decoder.end();
        current = null;
        // A message parsed inside another (not one attached as a file): mailparser shows its header lines.
        if (chunk.parentNode && chunk.parentNode.contentType === 'message/rfc822') embedded = true;
        if (!embedded) current = textPart(readers, chunk);
        if (current) parts.push(current);
      } else if (chunk.type === 'body' && current) current.decoder.write(chunk.value);
      else if (chunk.type === 'data') {
        current?.decoder.end();
        current = null;
      }
    });
    splitter.on('end', () => {
      current?.decoder.end();
      resolve(embedded ? null : parts);
    });
    splitter.on('error', reject);
    splitter.end(raw);
  });
}

/** A node mailparser reads as inline text, with its decoding chain started; null for anything else. */
function textPart({ FlowedDecoder, libmime }: BodyReaders, node: MimeNode): TextPart | null {
  const contentType = node.contentType || (node.root ? 'text/plain' : '');
  if (/^multipart\//i.test(contentType)) return null;
  let disposition = node.disposition || '';
  if (disposition && disposition !== 'attachment' && disposition !== 'inline') disposition = 'attachment';
  if (!disposition) disposition = TEXT_TYPES.includes(contentType) ? 'inline' : 'attachment';
  if (!TEXT_TYPES.includes(contentType) || disposition !== 'inline') return null;
  const decoder = node.getDecoder() as Transform;
  let stream: Readable = decoder;
  if (node.flowed) stream = stream.pipe(new FlowedDecoder({ delSp: node.delSp }) as unknown as Transform);
  const charset = node.charset || 'utf-8';
  if (!ASCII_OR_UTF8.includes(charset.toLowerCase().replace(/[^a-z0-9]+/g, ''))) {
    try {
      stream = stream.pipe(libmime.createDecodeStream(charset) as Transform);
    } catch {
      // a charset libmime cannot decode is kept as it is, as mailparser keeps it
    }
  }
  let alternative = false;
  for (let n: MimeNode | false = node; n; n = n.parentNode) if (n.contentType === 'multipart/alternative') alternative = true;
  return { contentType, alternative, root: node.root, content: collect(stream), decoder };
}

function collect(stream: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer | string) => chunks.push(typeof c === 'string' ? Buffer.from(c) : c));
    stream.once('end', () => resolve(Buffer.concat(chunks).toString().replace(/\r?\n/g, '\n')));
    stream.once('error', reject);
  });
}

/** mailparser's getTextContent (skipTextToHtml: a text part adds an empty HTML piece); null when HTML must become text. */
async function join(parts: TextPart[], want: 'text' | 'html'): Promise<DisplayBody | null> {
  const contents = await Promise.all(parts.map((p) => p.content));
  const hasHtml = parts.some((p) => p.contentType === 'text/html');
  const hasText = parts.some((p) => p.contentType !== 'text/html');
  const text: string[] = [];
  const html: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    const content = contents[i];
    if (!content) continue;
    if (p.contentType !== 'text/html') {
      text.push(content);
      if (!p.alternative && hasHtml) html.push('');
      continue;
    }
    if ((!p.alternative && hasText) || (p.root && !hasText)) {
      if (want === 'text') return null;
      text.push('');
    }
    html.push(content);
  }
  const joinedHtml = html.length ? html.join('<br/>\n') : '';
  return { text: text.length ? noNul(text.join('\n')) : null, html: joinedHtml ? noNul(joinedHtml) : null };
}

/** The same from mailparser as a stream (attachments skipped unread): what `join` leaves to it, and the reference the tests compare with. */
export async function displayBodyByMailparser(raw: Buffer, want: 'text' | 'html'): Promise<DisplayBody> {
  const { MailParser } = await mailparser();
  return new Promise((resolve, reject) => {
    const parser = new MailParser({ skipImageLinks: true, skipTextToHtml: true, skipHtmlToText: want === 'html', checksumAlgo: false });
    const out: DisplayBody = { text: null, html: null };
    parser.on('data', (part: { type: string; text?: unknown; html?: unknown; content?: NodeJS.ReadableStream; release?: () => void }) => {
      if (part.type === 'attachment') {
        part.content!.on('end', () => part.release?.());
        part.content!.resume();
      } else if (part.type === 'text') {
        out.text = typeof part.text === 'string' ? noNul(part.text) : null;
        out.html = typeof part.html === 'string' && part.html ? noNul(part.html) : null; // an empty HTML part is none, as simpleParser has it
      }
    });
    parser.on('end', () => resolve(out));
    parser.on('error', reject);
    parser.end(raw);
  });
}
