import { pageByName } from './codepages.js';
import type { CodePage } from './codepages.js';
import { WbxmlError } from './errors.js';
import { HEADER, TAG_CONTENT, TOKEN } from './tree.js';
import type { WbxmlElement } from './tree.js';

// Element tree → ActiveSync WBXML. An element without content is written without the content bit;
// text as one inline string (STR_I), a Buffer as OPAQUE (MIME data, conversation ids); the code
// page switches only when an element's page differs from the last one written.

/** Collects the output: single bytes in a pending run, large pieces appended as they are. */
class Writer {
  private readonly chunks: Uint8Array[] = [];
  private pending: number[] = [];

  byte(b: number): void {
    this.pending.push(b);
  }

  bytes(data: Uint8Array): void {
    this.flush();
    this.chunks.push(data);
  }

  mbUint32(value: number): void {
    const groups = [value & 0x7f];
    for (let v = Math.floor(value / 128); v > 0; v = Math.floor(v / 128)) groups.unshift((v & 0x7f) | 0x80);
    for (const g of groups) this.byte(g);
  }

  result(): Buffer {
    this.flush();
    return Buffer.concat(this.chunks);
  }

  private flush(): void {
    if (this.pending.length) this.chunks.push(Uint8Array.from(this.pending));
    this.pending = [];
  }
}

type Content = 'children' | 'text' | 'opaque';

function contentOf(el: WbxmlElement): Content | 'none' {
  const kinds: (Content | null)[] = [
    el.children?.length ? 'children' : null,
    el.text !== undefined ? 'text' : null,
    el.opaque !== undefined ? 'opaque' : null,
  ];
  const present = kinds.filter((k): k is Content => k !== null);
  if (present.length > 1)
    throw new WbxmlError('mixed-content', `${el.page}:${el.tag} has ${present.join(' and ')}; give it one kind of content`);
  return present[0] ?? 'none';
}

class Encoder {
  readonly out = new Writer();
  private page = 0;

  element(el: WbxmlElement): void {
    const page = this.switchTo(el);
    const token = page.tokens.get(el.tag);
    if (token === undefined) throw new WbxmlError('unknown-tag', `${el.tag} is not on code page ${page.name}`);
    const content = contentOf(el);
    this.out.byte(content === 'none' ? token : token | TAG_CONTENT);
    if (content === 'none') return;
    if (content === 'text') this.text(el, el.text!);
    else if (content === 'opaque') this.opaque(el.opaque!);
    else for (const child of el.children!) this.element(child);
    this.out.byte(TOKEN.END);
  }

  private switchTo(el: WbxmlElement): CodePage {
    const page = pageByName(el.page);
    if (!page) throw new WbxmlError('unknown-page', `no code page is named ${String(el.page)}`);
    if (page.page !== this.page) {
      this.out.byte(TOKEN.SWITCH_PAGE);
      this.out.byte(page.page);
      this.page = page.page;
    }
    return page;
  }

  private text(el: WbxmlElement, text: string): void {
    if (text.includes('\0')) throw new WbxmlError('nul-in-string', `the text of ${el.page}:${el.tag} holds a NUL character`);
    this.out.byte(TOKEN.STR_I);
    this.out.bytes(Buffer.from(text, 'utf8'));
    this.out.byte(0);
  }

  private opaque(data: Uint8Array): void {
    this.out.byte(TOKEN.OPAQUE);
    this.out.mbUint32(data.length);
    this.out.bytes(data);
  }
}

/** Encodes the tree as an ActiveSync WBXML document. Throws WbxmlError for a tree it cannot write. */
export function encode(root: WbxmlElement): Buffer {
  const e = new Encoder();
  e.out.byte(HEADER.version);
  e.out.mbUint32(HEADER.publicId);
  e.out.mbUint32(HEADER.charset);
  e.out.mbUint32(HEADER.stringTableLength);
  e.element(root);
  return e.out.result();
}
