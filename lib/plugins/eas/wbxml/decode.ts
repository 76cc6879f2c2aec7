import { pageByNumber } from './codepages.js';
import type { CodePage } from './codepages.js';
import { WbxmlError } from './errors.js';
import { HEADER, TAG_ATTRIBUTES, TAG_CONTENT, TAG_TOKEN_MASK, TOKEN } from './tree.js';
import type { WbxmlElement } from './tree.js';

// WBXML → element tree for ActiveSync (MS-ASWBXML on WAP-192 WBXML 1.3). One pass over the
// buffer with an explicit stack: linear time, no recursion, every read bounds-checked, so hostile
// input ends in a WbxmlError and never in a RangeError, a stack overflow or a hang.

export interface DecodeLimits {
  /** Largest input accepted, in bytes. */
  maxInputBytes: number;
  /** Deepest element nesting (the root is depth 1). */
  maxDepth: number;
  /** Most elements in one document. */
  maxElements: number;
  /** Longest text of one element, in UTF-8 bytes. */
  maxStringBytes: number;
  /** Longest opaque data of one element, in bytes. */
  maxOpaqueBytes: number;
}

/** Generous for real traffic (a Sync carrying large MIME), small enough to bound memory and time. */
export const DEFAULT_DECODE_LIMITS: Readonly<DecodeLimits> = Object.freeze({
  maxInputBytes: 64 * 1024 * 1024,
  maxDepth: 64,
  maxElements: 200_000,
  maxStringBytes: 16 * 1024 * 1024,
  maxOpaqueBytes: 64 * 1024 * 1024,
});

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Reads bytes and multi-byte integers off the input, never past its end. */
class Cursor {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  byte(): number {
    if (this.pos >= this.buf.length) throw new WbxmlError('truncated', 'the input ends too early', this.pos);
    return this.buf[this.pos++]!;
  }

  /** mb_u_int32: big-endian 7-bit groups, high bit set on all but the last; at most 5 bytes, < 2^32. */
  mbUint32(): number {
    const start = this.pos;
    let value = 0;
    for (let i = 0; i < 5; i++) {
      const b = this.byte();
      value = value * 128 + (b & 0x7f);
      if ((b & 0x80) === 0) {
        if (value > 0xffffffff) throw new WbxmlError('bad-mb-uint32', 'a multi-byte integer exceeds 32 bits', start);
        return value;
      }
    }
    throw new WbxmlError('bad-mb-uint32', 'a multi-byte integer runs past 5 bytes', start);
  }

  /** The bytes up to the next NUL (not included), which is consumed; at most `max` of them. */
  terminated(max: number): Uint8Array {
    const start = this.pos;
    const window = this.buf.subarray(start, Math.min(this.buf.length, start + max + 1));
    const end = window.indexOf(0);
    if (end < 0) {
      if (window.length > max) throw new WbxmlError('string-too-long', `an inline string is longer than ${max} bytes`, start);
      throw new WbxmlError('truncated', 'an inline string has no terminating NUL', start);
    }
    this.pos = start + end + 1;
    return this.buf.subarray(start, start + end);
  }

  take(length: number): Uint8Array {
    if (length > this.buf.length - this.pos)
      throw new WbxmlError('truncated', `opaque data of ${length} bytes runs past the end`, this.pos);
    const out = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }
}

/** An element whose END has not come yet, with its content gathered in pieces. */
interface Open {
  el: WbxmlElement;
  text?: Uint8Array[];
  opaque?: Uint8Array[];
  size: number;
}

function readHeader(c: Cursor): void {
  const version = c.byte();
  if (version !== HEADER.version) throw new WbxmlError('bad-version', `WBXML version 0x${version.toString(16)}, not 0x03`, 0);
  const publicId = c.mbUint32();
  if (publicId !== HEADER.publicId) throw new WbxmlError('bad-public-id', `public id ${publicId}, not 1 (unknown)`, 1);
  const at = c.pos;
  const charset = c.mbUint32();
  if (charset !== HEADER.charset) throw new WbxmlError('bad-charset', `charset ${charset}, not 106 (UTF-8)`, at);
  const tableAt = c.pos;
  if (c.mbUint32() !== 0) throw new WbxmlError('string-table', 'a string table; ActiveSync uses none', tableAt);
}

/** Text content: the pieces of consecutive inline strings, decoded once the element ends. */
function finish(open: Open, at: number): void {
  if (open.text) {
    const bytes = open.text.length === 1 ? open.text[0]! : Buffer.concat(open.text);
    try {
      open.el.text = utf8.decode(bytes);
    } catch {
      throw new WbxmlError('bad-utf8', `the text of ${open.el.page}:${open.el.tag} is not valid UTF-8`, at);
    }
  }
  if (open.opaque) open.el.opaque = Buffer.concat(open.opaque);
}

class Decoder {
  private readonly c: Cursor;
  private readonly stack: Open[] = [];
  private page: CodePage = pageByNumber(0)!;
  private root: WbxmlElement | undefined;
  private elements = 0;

  constructor(
    input: Uint8Array,
    private readonly limits: DecodeLimits,
  ) {
    this.c = new Cursor(input);
  }

  run(): WbxmlElement {
    readHeader(this.c);
    while (!this.c.done) {
      const at = this.c.pos;
      this.token(this.c.byte(), at);
      if (this.root && this.stack.length === 0 && !this.c.done) {
        throw new WbxmlError('trailing-bytes', 'bytes after the end of the root element', this.c.pos);
      }
    }
    if (!this.root) throw new WbxmlError('no-root', 'the body has no element', this.c.pos);
    if (this.stack.length > 0) throw new WbxmlError('truncated', `${this.stack.length} element(s) not ended`, this.c.pos);
    return this.root;
  }

  private token(b: number, at: number): void {
    if (b === TOKEN.SWITCH_PAGE) return this.switchPage();
    if (b === TOKEN.END) return this.end(at);
    if (b === TOKEN.STR_I) return this.inlineString(at);
    if (b === TOKEN.OPAQUE) return this.opaque(at);
    if ((b & TAG_TOKEN_MASK) < 0x05) {
      throw new WbxmlError('unsupported-token', `global token 0x${b.toString(16)} is not used by ActiveSync`, at);
    }
    if (b & TAG_ATTRIBUTES) throw new WbxmlError('attributes', 'a tag with attributes; ActiveSync uses none', at);
    this.tag(b, at);
  }

  private switchPage(): void {
    const at = this.c.pos;
    const n = this.c.byte();
    const page = pageByNumber(n);
    if (!page) throw new WbxmlError('unknown-page', `code page ${n} does not exist`, at);
    this.page = page;
  }

  private end(at: number): void {
    const open = this.stack.pop();
    if (!open) throw new WbxmlError('unbalanced-end', 'END without an open element', at);
    finish(open, at);
  }

  private tag(b: number, at: number): void {
    const token = b & TAG_TOKEN_MASK;
    const tag = this.page.tags.get(token);
    if (!tag) throw new WbxmlError('unknown-token', `token 0x${token.toString(16)} is not on code page ${this.page.name}`, at);
    if (++this.elements > this.limits.maxElements)
      throw new WbxmlError('too-many-elements', `more than ${this.limits.maxElements} elements`, at);
    if (this.stack.length + 1 > this.limits.maxDepth)
      throw new WbxmlError('too-deep', `elements nest deeper than ${this.limits.maxDepth}`, at);
    const el: WbxmlElement = { page: this.page.name, tag };
    const parent = this.stack.at(-1);
    if (parent) {
      if (parent.text || parent.opaque) throw new WbxmlError('mixed-content', `${parent.el.tag} holds both text and elements`, at);
      (parent.el.children ??= []).push(el);
    } else {
      this.root = el;
    }
    if (b & TAG_CONTENT) this.stack.push({ el, size: 0 });
  }

  /** The innermost open element, which text or opaque data may go into. */
  private holder(at: number, what: string): Open {
    const open = this.stack.at(-1);
    if (!open) throw new WbxmlError('content-outside-element', `${what} outside every element`, at);
    if (open.el.children) throw new WbxmlError('mixed-content', `${open.el.tag} holds both elements and ${what}`, at);
    return open;
  }

  private inlineString(at: number): void {
    const open = this.holder(at, 'text');
    if (open.opaque) throw new WbxmlError('mixed-content', `${open.el.tag} holds both opaque data and text`, at);
    const bytes = this.c.terminated(this.limits.maxStringBytes - open.size);
    open.size += bytes.length;
    (open.text ??= []).push(bytes);
  }

  private opaque(at: number): void {
    const open = this.holder(at, 'opaque data');
    if (open.text) throw new WbxmlError('mixed-content', `${open.el.tag} holds both text and opaque data`, at);
    const length = this.c.mbUint32();
    if (open.size + length > this.limits.maxOpaqueBytes) {
      throw new WbxmlError('opaque-too-long', `opaque data longer than ${this.limits.maxOpaqueBytes} bytes`, at);
    }
    open.size += length;
    (open.opaque ??= []).push(this.c.take(length));
  }
}

/**
 * Decodes an ActiveSync WBXML document into its root element. Throws WbxmlError (with a
 * `reason`) for anything malformed or over the limits, and for nothing else.
 */
export function decode(input: Uint8Array, limits: Partial<DecodeLimits> = {}): WbxmlElement {
  const all: DecodeLimits = { ...DEFAULT_DECODE_LIMITS, ...limits };
  if (input.length > all.maxInputBytes) throw new WbxmlError('too-large', `${input.length} bytes, more than ${all.maxInputBytes}`);
  return new Decoder(input, all).run();
}
