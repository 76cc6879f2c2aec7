// CSS declarations of mail HTML (inline `style` attributes and the rules of a `<style>` block).
//
// Every declaration is decoded (comments removed, CSS escapes such as `\69`, `\000069` or
// `expr\ession` turned into the characters they stand for) and only then checked: its property
// must be on the allowlist below and its value must consist of tokens this file knows
// (keywords, numbers with known units, hex colours, rgb()/hsl() colours, quoted font names, and
// url() with https: or cid: on the background properties). The output is re-serialised from
// those tokens, never copied from the input, so it holds no escape, comment, quote or bracket the
// checks did not see. Anything else drops the declaration: `expression()`, `behavior`,
// `-moz-binding`, `-o-link`, `url(javascript:…)`, `url(data:…)`, `position`, `content`,
// custom properties and var(), calc() and every other function.

import postcss from 'postcss';

export type Token =
  | { t: 'ws' }
  | { t: 'comma' }
  | { t: 'slash' }
  | { t: 'ident'; v: string }
  | { t: 'num'; v: string; neg: boolean }
  | { t: 'dim'; v: string; neg: boolean }
  | { t: 'hash'; v: string }
  | { t: 'str'; v: string }
  | { t: 'color'; v: string }
  | { t: 'url'; v: string };
type Kind = Token['t'];

const COLOR: Kind[] = ['ident', 'hash', 'color'];
const SIZE: Kind[] = ['ident', 'num', 'dim'];
const WORD: Kind[] = ['ident'];
const BORDER: Kind[] = ['ident', 'num', 'dim', 'hash', 'color'];

/** Property → the token kinds its value may use (whitespace is always allowed). */
const PROPERTIES: Record<string, Kind[]> = {
  color: COLOR,
  'background-color': COLOR,
  'border-color': COLOR,
  'text-decoration-color': COLOR,
  'border-top-color': COLOR,
  'border-right-color': COLOR,
  'border-bottom-color': COLOR,
  'border-left-color': COLOR,
  width: SIZE,
  height: SIZE,
  'min-width': SIZE,
  'max-width': SIZE,
  'min-height': SIZE,
  'max-height': SIZE,
  margin: SIZE,
  'margin-top': SIZE,
  'margin-right': SIZE,
  'margin-bottom': SIZE,
  'margin-left': SIZE,
  padding: SIZE,
  'padding-top': SIZE,
  'padding-right': SIZE,
  'padding-bottom': SIZE,
  'padding-left': SIZE,
  'font-size': SIZE,
  'font-weight': SIZE,
  'line-height': SIZE,
  'letter-spacing': SIZE,
  'word-spacing': SIZE,
  'text-indent': SIZE,
  'vertical-align': SIZE,
  opacity: ['num', 'dim'],
  'border-spacing': SIZE,
  'border-width': SIZE,
  'border-top-width': SIZE,
  'border-right-width': SIZE,
  'border-bottom-width': SIZE,
  'border-left-width': SIZE,
  'border-radius': [...SIZE, 'slash'],
  'border-top-left-radius': SIZE,
  'border-top-right-radius': SIZE,
  'border-bottom-left-radius': SIZE,
  'border-bottom-right-radius': SIZE,
  border: BORDER,
  'border-top': BORDER,
  'border-right': BORDER,
  'border-bottom': BORDER,
  'border-left': BORDER,
  outline: BORDER,
  'border-style': WORD,
  'border-top-style': WORD,
  'border-right-style': WORD,
  'border-bottom-style': WORD,
  'border-left-style': WORD,
  'text-align': WORD,
  'text-transform': WORD,
  'text-decoration': [...COLOR, 'dim'],
  'text-decoration-line': WORD,
  'text-decoration-style': WORD,
  'font-style': WORD,
  'font-variant': WORD,
  'white-space': WORD,
  'word-break': WORD,
  'word-wrap': WORD,
  'overflow-wrap': WORD,
  'text-overflow': WORD,
  display: WORD,
  visibility: WORD,
  overflow: WORD,
  'overflow-x': WORD,
  'overflow-y': WORD,
  float: WORD,
  clear: WORD,
  'box-sizing': WORD,
  direction: WORD,
  'border-collapse': WORD,
  'table-layout': WORD,
  'caption-side': WORD,
  'empty-cells': WORD,
  'list-style': WORD,
  'list-style-type': WORD,
  'list-style-position': WORD,
  'font-family': ['ident', 'str', 'comma'],
  font: ['ident', 'num', 'dim', 'str', 'comma', 'slash'],
  background: ['ident', 'num', 'dim', 'hash', 'color', 'url', 'comma', 'slash'],
  'background-image': ['ident', 'url', 'comma'],
  'background-position': ['ident', 'num', 'dim', 'comma'],
  'background-repeat': ['ident', 'comma'],
  'background-size': ['ident', 'num', 'dim', 'comma'],
};

/**
 * Properties whose negative values (lengths or bare numbers) could move or paint message content over
 * what surrounds it: margins, text-indent (text drawn left of the box), letter- and word-spacing.
 */
const NO_NEGATIVE = /^(?:margin|text-indent$|letter-spacing$|word-spacing$)/;
/**
 * Where a number without a unit is allowed other than 0. Everywhere else it is a length, and a
 * quirks-mode document (a message shown without a doctype) reads `margin-top:-500` as -500px.
 */
const UNITLESS = new Set(['line-height', 'font-weight', 'opacity', 'font']);
/** An outline is drawn outside the box it belongs to: only a thin one (≤ 10px, or a keyword) is kept. */
const MAX_OUTLINE_PX = 10;
const UNITS = new Set(['px', 'pt', 'pc', 'em', 'rem', 'ex', 'ch', '%', 'vw', 'vh', 'vmin', 'vmax', 'cm', 'mm', 'in']);
const COLOR_FUNCTIONS = new Set(['rgb', 'rgba', 'hsl', 'hsla']);
const FONT_NAME = /^[\p{L}\p{N} _.-]+$/u;

/** Comments out (each one separates tokens, as in CSS), then CSS escapes decoded. */
export function decodeCss(s: string): string {
  if (!s.includes('\\') && !s.includes('/*')) return s;
  return s
    .replace(/\/\*[\s\S]*?(?:\*\/|$)/g, ' ')
    .replace(/\\(?:([0-9a-fA-F]{1,6})(?:\r\n|[ \t\n\r\f])?|([\s\S]))/g, (_m, hex: string | undefined, ch: string) => {
      if (hex !== undefined) {
        const cp = parseInt(hex, 16);
        return cp === 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ? '\uFFFD' : String.fromCodePoint(cp);
      }
      return /[\n\r\f]/.test(ch) ? '' : ch;
    });
}

/** https: (re-encoded so no quote, bracket, `;`, `*`, backslash or space remains) or cid:; anything else null. */
function cssUrl(raw: string): string | null {
  const u = raw.trim();
  if (/^cid:[\w.@$%+=-]+$/i.test(u)) return u;
  if (!/^https:\/\//i.test(u)) return null;
  let href: string;
  try {
    href = new URL(u).href;
  } catch {
    return null;
  }
  // Serialized unquoted: `;` too, or a client that splits a style attribute at `;` reads what follows as a declaration.
  href = href.replace(/['(){};*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return /^https:\/\/[\x21-\x7e]+$/.test(href) && !/["\\<>]/.test(href) ? href : null;
}

// Sticky (`y`): each is tried at the position the tokenizer has reached, without copying the rest.
const SPACE = /\s+/y;
const HASH = /#([0-9a-fA-F]{3,8})(?![\w-])/y;
const NUMBER = /[+-]?(?:\d+(?:\.\d+)?|\.\d+)([a-zA-Z%]*)/y;
const IDENT = /-?[a-zA-Z_][a-zA-Z0-9_-]*/y;

/** A token and the position right after it. */
type Read = [Token, number];

/** The sticky pattern's match at position i, or null. */
function matchAt(re: RegExp, s: string, i: number): RegExpExecArray | null {
  re.lastIndex = i;
  return re.exec(s);
}

/** A quoted font name starting at i (its quote), or null when unterminated or not a plain name. */
function readString(s: string, i: number): Read | null {
  const end = s.indexOf(s[i], i + 1);
  if (end < 0) return null;
  const v = s.slice(i + 1, end).trim();
  if (!FONT_NAME.test(v)) return null;
  return [{ t: 'str', v }, end + 1];
}

/** A number as a plain number or a dimension with a known unit (lower-cased); null for any other unit. */
function numberToken(m: RegExpExecArray): Token | null {
  const unit = m[1].toLowerCase();
  const neg = m[0].startsWith('-') && /[1-9]/.test(m[0]);
  if (unit === '') return { t: 'num', v: m[0], neg };
  if (UNITS.has(unit)) return { t: 'dim', v: m[0].slice(0, m[0].length - m[1].length) + unit, neg };
  return null;
}

/** The target of url(…) as an https: or cid: URL, or null. */
function urlArgument(args: string): string | null {
  // Quoted, a URL may hold spaces (the URL parser encodes them); unquoted, it may not.
  const quoted = /^\s*(["'])([^"'\n]*)\1\s*$/.exec(args);
  const target = quoted ? quoted[2].trim() : args.trim();
  if (/["'()]/.test(target) || (!quoted && /\s/.test(target))) return null;
  return cssUrl(target);
}

/** A function call whose `(` is at `open`: an rgb()/hsl() colour or a url(); any other function (or an unclosed one) is null. */
function readFunction(s: string, name: string, open: number): Read | null {
  const close = s.indexOf(')', open);
  if (close < 0) return null;
  const args = s.slice(open + 1, close);
  const fn = name.toLowerCase();
  if (COLOR_FUNCTIONS.has(fn) && /^[\d\s.,%/+-]+$/.test(args)) {
    return [{ t: 'color', v: `${fn}(${args.trim().replace(/\s+/g, ' ')})` }, close + 1];
  }
  if (fn !== 'url') return null;
  const url = urlArgument(args);
  return url === null ? null : [{ t: 'url', v: url }, close + 1];
}

/** The token (other than whitespace) that starts at i, or null when it is not one this file knows. */
function readToken(s: string, i: number): Read | null {
  const c = s[i];
  if (c === ',' || c === '/') return [{ t: c === ',' ? 'comma' : 'slash' }, i + 1];
  if (c === '#') {
    const m = matchAt(HASH, s, i);
    if (!m || ![3, 4, 6, 8].includes(m[1].length)) return null;
    return [{ t: 'hash', v: m[0].toLowerCase() }, i + m[0].length];
  }
  if (c === '"' || c === "'") return readString(s, i);
  const num = matchAt(NUMBER, s, i);
  if (num) {
    const tk = numberToken(num);
    return tk ? [tk, i + num[0].length] : null;
  }
  const id = matchAt(IDENT, s, i);
  if (!id) return null;
  const end = i + id[0].length;
  return s[end] === '(' ? readFunction(s, id[0], end) : [{ t: 'ident', v: id[0] }, end];
}

/** The tokens of a decoded value, or null when any part of it is not one this file knows. */
export function tokenize(s: string): Token[] | null {
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const space = matchAt(SPACE, s, i);
    if (space) {
      if (out.at(-1)?.t !== 'ws') out.push({ t: 'ws' });
      i += space[0].length;
      continue;
    }
    const read = readToken(s, i);
    if (!read) return null;
    out.push(read[0]);
    i = read[1];
  }
  return out;
}

function serialize(tokens: Token[]): string {
  return tokens
    .map((tk) => {
      switch (tk.t) {
        case 'ws':
          return ' ';
        case 'comma':
          return ',';
        case 'slash':
          return '/';
        case 'str':
          return `'${tk.v}'`;
        case 'url':
          return `url(${tk.v})`;
        default:
          return tk.v;
      }
    })
    .join('')
    .trim();
}

/** Whether a token may stand in the property's value: its kind, its sign, a unitless number, an outline's width. */
function tokenAllowed(name: string, kinds: Kind[], tk: Token): boolean {
  if (tk.t === 'ws') return true;
  if (!kinds.includes(tk.t)) return false;
  if ((tk.t === 'dim' || tk.t === 'num') && tk.neg && NO_NEGATIVE.test(name)) return false;
  if (tk.t === 'num' && /[1-9]/.test(tk.v) && !UNITLESS.has(name)) return false;
  return !(
    name === 'outline' &&
    tk.t === 'dim' &&
    /[1-9]/.test(tk.v) &&
    !(tk.v.endsWith('px') && !tk.neg && parseFloat(tk.v) <= MAX_OUTLINE_PX)
  );
}

/** One declaration as `prop:value`, or null when it is not allowed. */
export function cleanDeclaration(prop: string, value: string, important = false): string | null {
  const name = decodeCss(prop).trim().toLowerCase();
  const kinds = PROPERTIES[name];
  if (!kinds) return null;
  const tokens = tokenize(decodeCss(value));
  if (!tokens || !tokens.some((tk) => tk.t !== 'ws')) return null;
  if (!tokens.every((tk) => tokenAllowed(name, kinds, tk))) return null;
  return `${name}:${serialize(tokens)}${important ? ' !important' : ''}`;
}

/** Longer `style` attributes are dropped whole: no real message needs one, and each costs a parse. */
export const MAX_INLINE_STYLE_CHARS = 16 * 1024;

/** A `style` attribute: its allowed declarations, re-serialised (`''` when none is left). */
export function cleanInlineStyle(value: string): string {
  if (value.length > MAX_INLINE_STYLE_CHARS) return '';
  let root: postcss.Root;
  try {
    root = postcss.parse(value);
  } catch {
    return '';
  }
  const kept: string[] = [];
  for (const node of root.nodes) {
    if (node.type !== 'decl') continue;
    const d = cleanDeclaration(node.prop, node.value, node.important);
    if (d !== null) kept.push(d);
  }
  return kept.join(';');
}
