import { createHash } from 'node:crypto';
import sanitizeHtml from 'sanitize-html';
import { cleanInlineStyle } from './sanitize-css.js';
import { cleanClassAttribute, cleanStyleSheet } from './sanitize-stylesheet.js';

// HTML bodies are cleaned before any client can see them (Spec: What the service does, 4), and
// the result must be safe for any client that renders it, not only for our own pages.
//
// - Elements and attributes: an allowlist (layout, text and tables, images). Scripts, event
//   handlers, forms, frames, objects, <base>, <meta>, <link>, SVG and MathML go; an element we do
//   not keep loses its tag but keeps its text, except script-like elements, which lose both.
// - URLs are checked as a browser reads them (leading and trailing control characters and spaces
//   and every tab and newline removed, after HTML entities are decoded, so `jav&#x09;ascript:` is
//   `javascript:`). Links keep http:, https:, mailto: and in-message `#fragment`s; images keep
//   http:, https:, cid: and `data:image/(png|gif|jpeg|webp);base64`: no SVG, which can carry
//   script, and no other data: anywhere. Relative URLs go: mail has no base, so they would resolve
//   against the site that displays the message.
// - CSS: `style` attributes keep only allowlisted declarations (sanitize-css.ts); `<style>` blocks
//   are rebuilt from their checked rules, scoped to the message, and `class` names are moved into
//   the message's namespace (`m-…`) so they match its rules and no one else's
//   (sanitize-stylesheet.ts). When a stylesheet survives, the body is wrapped in
//   `<div class="svcmail-<hash>">` with the one rebuilt `<style>` first: the scope its rules are
//   under (the hash is of the input, so the same message always gets the same scope).

const ALLOWED_TAGS = [
  ...sanitizeHtml.defaults.allowedTags,
  'img',
  'font',
  'center',
  'span',
  'div',
  'table',
  'thead',
  'tbody',
  'tfoot',
  'tr',
  'td',
  'th',
  'colgroup',
  'col',
  'caption',
  'hr',
  'br',
  'u',
  's',
  'small',
  'big',
  'sub',
  'sup',
  'style',
];

const LINK_SCHEMES = new Set(['http', 'https', 'mailto']);
const IMAGE_SCHEMES = new Set(['http', 'https', 'cid']);
const SAFE_DATA_IMAGE = /^data:image\/(?:png|gif|jpeg|jpg|webp);base64,[a-z0-9+/=\s]*$/i;

/**
 * The URL as a browser's URL parser starts reading it: C0 controls and spaces trimmed from both ends,
 * then every tab and newline removed. Index scans, not a regex: `[\u0000-\u0020]+$` tried at every
 * position of a long run of spaces inside a URL is quadratic (60 000 of them take seconds).
 */
export function asParsed(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && value.charCodeAt(start) <= 0x20) start++;
  while (end > start && value.charCodeAt(end - 1) <= 0x20) end--;
  let out = '';
  let from = start;
  for (let i = start; i < end; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x09 || c === 0x0a || c === 0x0d) {
      out += value.slice(from, i);
      from = i + 1;
    }
  }
  return out + value.slice(from, end);
}

/**
 * An http(s) URL with a host, as `scheme://rest`, or null. Only two or more slashes after the scheme
 * (browsers read `\` as `/` in these schemes and skip any further ones) make a URL absolute: on a
 * page of the same scheme, `http:/api/x` and `http:api/x` resolve against the page's own origin.
 */
function absoluteHttp(url: string, scheme: string): string | null {
  let i = scheme.length + 1;
  while (i < url.length && (url[i] === '/' || url[i] === '\\')) i++;
  const slashes = i - scheme.length - 1;
  if (slashes < 2) return null;
  const out = slashes === 2 && url.startsWith('//', scheme.length + 1) ? url : `${url.slice(0, scheme.length)}://${url.slice(i)}`;
  try {
    if (!new URL(out).hostname) return null;
  } catch {
    return null;
  }
  return out;
}

/** The URL to keep on a link or an image, or null to drop the attribute. */
export function safeUrl(value: string, on: 'link' | 'image'): string | null {
  const url = asParsed(value);
  if (on === 'link' && /^#[^\u0000-\u001f]*$/.test(url)) return url; // eslint-disable-line no-control-regex
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url)?.[1].toLowerCase();
  if (scheme === undefined) return null;
  if (scheme === 'data') return on === 'image' && SAFE_DATA_IMAGE.test(url) ? url : null;
  if (!(on === 'link' ? LINK_SCHEMES : IMAGE_SCHEMES).has(scheme)) return null;
  if (scheme === 'http' || scheme === 'https') return absoluteHttp(url, scheme);
  return url;
}

function withUrl(attribs: sanitizeHtml.Attributes, name: string, on: 'link' | 'image'): sanitizeHtml.Attributes {
  const out = { ...attribs };
  const url = out[name] === undefined ? null : safeUrl(out[name], on);
  if (url === null) delete out[name];
  else out[name] = url;
  return out;
}

function options(sheets: string[]): sanitizeHtml.IOptions {
  return {
    allowedTags: ALLOWED_TAGS,
    disallowedTagsMode: 'discard',
    // Elements that go with their text: script-like ones, and <title> (a document's name, not its body).
    nonTextTags: ['script', 'style', 'textarea', 'option', 'xmp', 'title'],
    allowedAttributes: {
      '*': ['style', 'align', 'valign', 'width', 'height', 'bgcolor', 'color', 'dir', 'lang', 'title', 'class'],
      a: ['href', 'name', 'target', 'rel'],
      img: ['src', 'alt', 'border', 'hspace', 'vspace'],
      font: ['face', 'size', 'color'],
      table: ['border', 'cellpadding', 'cellspacing', 'summary'],
      td: ['colspan', 'rowspan', 'nowrap'],
      th: ['colspan', 'rowspan', 'nowrap', 'scope'],
    },
    // A second check of what safeUrl kept (sanitize-html's own scheme filter).
    allowedSchemes: ['http', 'https', 'mailto'],
    allowedSchemesByTag: { img: ['http', 'https', 'cid', 'data'] },
    allowProtocolRelative: false,
    allowVulnerableTags: true, // <style> is read here but never copied: exclusiveFilter takes it out
    parseStyleAttributes: false, // style attributes are rewritten by cleanInlineStyle instead
    transformTags: {
      a: (tagName, attribs) => ({
        tagName,
        attribs: { ...withUrl(attribs, 'href', 'link'), rel: 'noopener noreferrer nofollow', target: '_blank' },
      }),
      img: (tagName, attribs) => ({ tagName, attribs: withUrl(attribs, 'src', 'image') }),
      '*': (tagName, attribs) => {
        const out = { ...attribs };
        if (out.style !== undefined) out.style = cleanInlineStyle(out.style);
        if (out.class !== undefined) out.class = cleanClassAttribute(out.class);
        for (const name of ['style', 'class']) if (out[name] === '') delete out[name];
        return { tagName, attribs: out };
      },
    },
    exclusiveFilter: (frame) => {
      if (frame.tag !== 'style') return false;
      sheets.push(frame.text);
      return true;
    },
  };
}

/**
 * More `<style>` text than this (real newsletters carry tens of kilobytes) is dropped whole and the
 * message shows unstyled: the body is cleaned again on every read, and CSS parsing is the costly part.
 */
export const MAX_STYLESHEET_CHARS = 512 * 1024;

export function sanitizeMailHtml(html: string): string {
  const sheets: string[] = [];
  const body = sanitizeHtml(html, options(sheets));
  if (!sheets.length || sheets.reduce((n, s) => n + s.length, 0) > MAX_STYLESHEET_CHARS) return body;
  const scope = `svcmail-${createHash('sha256').update(html).digest('hex').slice(0, 16)}`;
  const css = sheets
    .map((s) => cleanStyleSheet(s, scope))
    .filter(Boolean)
    .join('\n');
  // Built only from checked tokens, the stylesheet holds no `<`; if it ever did, `</style` could end it.
  if (!css || css.includes('<')) return body;
  return `<div class="${scope}"><style>${css}</style>${body}</div>`;
}
