import { pageByName } from './codepages.js';
import type { PageName } from './codepages.js';
import type { WbxmlElement } from './tree.js';

// The readable side of the codec: an element tree as namespaced XML for logs, tests and debugging
// (the root's namespace is the default one, every other page used gets its prefix on the root:
// `<Sync xmlns="AirSync:" xmlns:airsyncbase="AirSyncBase:">`), and builders that write trees tersely.

export interface XmlOptions {
  /** Indentation per level; '' writes everything on one line. Default two spaces. */
  indent?: string;
  /** Opaque data as base64 (the default) or only as its size, for logs that must not carry MIME. */
  opaque?: 'base64' | 'size';
}

const escapeXml = (s: string) => s.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;')).replace(/\r/g, '&#13;');

/** The namespaces used below the root, other than the root's own, in order of first use. */
function namespacesOf(root: WbxmlElement): PageName[] {
  const seen = new Set<PageName>([root.page]);
  const todo = [root];
  for (let el = todo.pop(); el; el = todo.pop()) {
    seen.add(el.page);
    for (let i = (el.children?.length ?? 0) - 1; i >= 0; i--) todo.push(el.children![i]!);
  }
  seen.delete(root.page);
  return [...seen];
}

function qualified(el: WbxmlElement, defaultPage: PageName): string {
  return el.page === defaultPage ? el.tag : `${pageByName(el.page)?.prefix ?? el.page.toLowerCase()}:${el.tag}`;
}

function contentXml(el: WbxmlElement, opt: Required<XmlOptions>): string {
  if (el.text !== undefined) return escapeXml(el.text);
  if (el.opaque === undefined) return '';
  return opt.opaque === 'size' ? `<!-- opaque, ${el.opaque.length} bytes -->` : `<!-- opaque, base64 -->${el.opaque.toString('base64')}`;
}

function elementXml(el: WbxmlElement, defaultPage: PageName, depth: number, opt: Required<XmlOptions>, rootAttrs = ''): string {
  const pad = opt.indent.repeat(depth);
  const name = qualified(el, defaultPage);
  const nl = opt.indent ? '\n' : '';
  if (el.children?.length) {
    const inner = el.children.map((c) => elementXml(c, defaultPage, depth + 1, opt)).join('');
    return `${pad}<${name}${rootAttrs}>${nl}${inner}${pad}</${name}>${nl}`;
  }
  const content = contentXml(el, opt);
  return content === '' && el.text === undefined
    ? `${pad}<${name}${rootAttrs}/>${nl}`
    : `${pad}<${name}${rootAttrs}>${content}</${name}>${nl}`;
}

/** The tree as XML, without an XML declaration. */
export function toXml(root: WbxmlElement, options: XmlOptions = {}): string {
  const opt: Required<XmlOptions> = { indent: options.indent ?? '  ', opaque: options.opaque ?? 'base64' };
  const nsOf = (p: PageName) => pageByName(p)?.namespace ?? `${p}:`;
  const attrs = [` xmlns="${nsOf(root.page)}"`, ...namespacesOf(root).map((p) => ` xmlns:${pageByName(p)?.prefix}="${nsOf(p)}"`)];
  return elementXml(root, root.page, 0, opt, attrs.join('')).trimEnd();
}

/** What an element built by `el` holds: child elements, text (numbers become text) or opaque bytes. */
export type ElementContent = WbxmlElement[] | string | number | Buffer;

/**
 * An element: `el('AirSync', 'Sync', [el('AirSync', 'Collections', [...])])`,
 * `el('AirSync', 'SyncKey', '0')`, `el('ComposeMail', 'Mime', mimeBuffer)`, `el('AirSync', 'GetChanges')`.
 */
export function el(page: PageName, tag: string, content?: ElementContent): WbxmlElement {
  if (content === undefined) return { page, tag };
  if (Buffer.isBuffer(content)) return { page, tag, opaque: content };
  if (Array.isArray(content)) return content.length ? { page, tag, children: content } : { page, tag };
  return { page, tag, text: String(content) };
}

/** An element holding text: `text('AirSync', 'SyncKey', 0)`. */
export function text(page: PageName, tag: string, value: string | number): WbxmlElement {
  return { page, tag, text: String(value) };
}

/** An element holding opaque bytes: `opaque('ComposeMail', 'Mime', buf)`. */
export function opaque(page: PageName, tag: string, data: Buffer): WbxmlElement {
  return { page, tag, opaque: data };
}

/** A builder bound to one page: `const as = ns('AirSync'); as('Sync', [as('Collections', [...])])`. */
export function ns(page: PageName): (tag: string, content?: ElementContent) => WbxmlElement {
  return (tag, content) => el(page, tag, content);
}
