// An independent check of sanitized mail HTML: the output is parsed again (htmlparser2 for the
// markup, postcss for the CSS) and every element, attribute, URL, class, selector, at-rule and CSS
// declaration is held against an allowlist written here, not imported from the sanitizer, so a
// mistake in the sanitizer's own lists shows up as a violation. Textual checks back it up on the
// raw output (a `<script` or an `on…=` inside a tag is there whatever the parse says).
import { Parser } from 'htmlparser2';
import postcss from 'postcss';

const TAGS = new Set([
  'address',
  'article',
  'aside',
  'footer',
  'header',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hgroup',
  'main',
  'nav',
  'section',
  'blockquote',
  'dd',
  'div',
  'dl',
  'dt',
  'figcaption',
  'figure',
  'hr',
  'li',
  'menu',
  'ol',
  'p',
  'pre',
  'ul',
  'a',
  'abbr',
  'b',
  'bdi',
  'bdo',
  'br',
  'cite',
  'code',
  'data',
  'dfn',
  'em',
  'i',
  'kbd',
  'mark',
  'q',
  'rb',
  'rp',
  'rt',
  'rtc',
  'ruby',
  's',
  'samp',
  'small',
  'span',
  'strong',
  'sub',
  'sup',
  'time',
  'u',
  'var',
  'wbr',
  'caption',
  'col',
  'colgroup',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'img',
  'font',
  'center',
  'big',
  'style',
]);
const GLOBAL_ATTRIBUTES = ['style', 'align', 'valign', 'width', 'height', 'bgcolor', 'color', 'dir', 'lang', 'title', 'class'];
const ATTRIBUTES: Record<string, string[]> = {
  a: ['href', 'name', 'target', 'rel'],
  img: ['src', 'alt', 'border', 'hspace', 'vspace'],
  font: ['face', 'size', 'color'],
  table: ['border', 'cellpadding', 'cellspacing', 'summary'],
  td: ['colspan', 'rowspan', 'nowrap'],
  th: ['colspan', 'rowspan', 'nowrap', 'scope'],
};
const LINK = /^(?:https?:\/\/|mailto:|#)/i;
const IMAGE = /^(?:https?:\/\/|cid:|data:image\/(?:png|gif|jpe?g|webp);base64,[A-Za-z0-9+/=\s]*$)/i;
/** Layout, colour and text properties only: nothing positions, loads code, or reaches outside the element. */
const CSS_PROPERTY =
  /^(?:color|opacity|display|visibility|float|clear|direction|box-sizing|vertical-align|white-space|word-(?:break|wrap|spacing)|overflow(?:-[xy]|-wrap)?|(?:min-|max-)?(?:width|height)|(?:margin|padding)(?:-(?:top|right|bottom|left))?|border(?:-(?:top|right|bottom|left))?(?:-(?:color|width|style))?|border-(?:radius|collapse|spacing)|border-(?:top|bottom)-(?:left|right)-radius|outline|font(?:-(?:family|size|weight|style|variant))?|line-height|letter-spacing|text-(?:align|transform|indent|overflow|decoration(?:-(?:color|line|style))?)|background(?:-(?:color|image|position|repeat|size))?|list-style(?:-(?:type|position))?|table-layout|caption-side|empty-cells)$/;
const CSS_FUNCTION = /([a-z-]*)\(([^()]*)\)/gi;
const CSS_WORDS = /expression|behavio|binding|javascript|vbscript|data:|@import|-o-link|var\(|calc\(|attr\(/i;
/**
 * The same words where they could act in a value: a call (`expression(`), a scheme (`javascript:`),
 * anything but a bare word. A bare identifier (`width:expression`) calls nothing, and the path of an
 * https url() (`url(https://x.example/data:x)`) is a path: the url rule below checks those.
 */
const CSS_VALUE_WORDS = /(?:expression|behaviou?r|binding|javascript|vbscript)(?=[^\w-]*[(:])|data:|@import|-o-link|var\(|calc\(|attr\(/i;
const HTTPS_URL = /url\(https:\/\/[^()\s"'\\<>]*\)/gi;
const FORBIDDEN_TAG =
  /<\s*\/?\s*(?:script|iframe|frame|frameset|object|embed|applet|form|input|button|textarea|select|option|base|meta|link|svg|math|template|noscript|xmp|plaintext|listing|image|isindex|bgsound|video|audio|source|picture|xml|set|animate|vmlframe|comment)\b/i;

export interface Finding {
  where: string;
  problem: string;
}

/** The problems of one CSS declaration (empty when it is allowed). */
export function checkDeclaration(prop: string, value: string, where: string): Finding[] {
  const out: Finding[] = [];
  if (!CSS_PROPERTY.test(prop)) out.push({ where, problem: `CSS property ${prop}` });
  if (/[\\"<>{};]|\/\*/.test(value)) out.push({ where, problem: `escape, quote or bracket in CSS value ${value}` });
  if (CSS_VALUE_WORDS.test(value.replace(HTTPS_URL, ' ')) || CSS_WORDS.test(prop))
    out.push({ where, problem: `script-capable CSS ${prop}:${value}` });
  if (/^margin/.test(prop) && /(^|\s)-\d*[1-9]/.test(value)) out.push({ where, problem: `negative margin ${value}` });
  for (const [, fn, args] of value.matchAll(CSS_FUNCTION)) {
    const name = fn.toLowerCase();
    if (name === 'url') {
      if (!/^background/.test(prop) || !/^(?:https:\/\/|cid:)[^\s"'()\\<>]+$/i.test(args))
        out.push({ where, problem: `url(${args}) on ${prop}` });
    } else if (!['rgb', 'rgba', 'hsl', 'hsla'].includes(name) || !/^[\d\s.,%/+-]*$/.test(args)) {
      out.push({ where, problem: `CSS function ${fn}(${args})` });
    }
  }
  return out;
}

function checkInlineStyle(style: string, where: string): Finding[] {
  let root: postcss.Root;
  try {
    root = postcss.parse(style);
  } catch {
    return [{ where, problem: `style attribute does not parse: ${style}` }];
  }
  return root.nodes.flatMap((n) =>
    n.type === 'decl' ? checkDeclaration(n.prop, n.value, where) : [{ where, problem: `${n.type} in a style attribute` }],
  );
}

function checkStyleSheet(css: string, scope: string | null): Finding[] {
  const where = '<style>';
  if (scope === null) return [{ where, problem: '<style> outside the message scope element' }];
  if (css.includes('<')) return [{ where, problem: '< in a stylesheet' }];
  let root: postcss.Root;
  try {
    root = postcss.parse(css);
  } catch {
    return [{ where, problem: 'stylesheet does not parse' }];
  }
  const out: Finding[] = [];
  const rule = (r: postcss.Rule) => {
    for (const sel of r.selectors) {
      if (!(sel === `.${scope}` || sel.startsWith(`.${scope} `))) out.push({ where, problem: `selector outside the scope: ${sel}` });
      if (/[[\]#\\"'@]|::|\/\*/.test(sel)) out.push({ where, problem: `selector part not allowed: ${sel}` });
      for (const [, cls] of sel.matchAll(/\.([\w-]+)/g))
        if (cls !== scope && !cls.startsWith('m-')) out.push({ where, problem: `class outside the message namespace: ${cls}` });
      if (
        /:(?!hover|active|focus|link|visited|first-child|last-child|only-child|first-of-type|last-of-type|only-of-type|nth-(?:last-)?(?:child|of-type)\()/.test(
          sel,
        )
      )
        out.push({ where, problem: `pseudo-class in ${sel}` });
    }
    for (const n of r.nodes) {
      if (n.type === 'decl') out.push(...checkDeclaration(n.prop, n.value, `${where} ${r.selector}`));
      else out.push({ where, problem: `${n.type} nested in a rule` });
    }
  };
  for (const n of root.nodes) {
    if (n.type === 'rule') rule(n);
    else if (n.type === 'atrule' && n.name === 'media' && /^[\w\s(),:.-]+$/.test(n.params)) {
      for (const c of n.nodes ?? []) {
        if (c.type === 'rule') rule(c);
        else out.push({ where, problem: `${c.type} in @media` });
      }
    } else {
      out.push({ where, problem: `${n.type === 'atrule' ? `@${n.name} ${n.params}` : n.type} in a stylesheet` });
    }
  }
  return out;
}

/** Every way `html` breaks the allowlist (empty when it is clean). */
export function inspectSanitized(html: string): Finding[] {
  const out: Finding[] = [];
  const stack: string[] = [];
  let scope: string | null = null;
  let styleText: string | null = null;
  let first = true;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        const where = `<${name}>`;
        const wrapper = first && name === 'div' && /^svcmail-[0-9a-f]{16}$/.test(attribs.class ?? '') && Object.keys(attribs).length === 1;
        first = false;
        if (wrapper) scope = attribs.class;
        if (!TAGS.has(name)) out.push({ where, problem: 'element not allowed' });
        if (name === 'style') {
          if (stack.length !== 1 || scope === null) out.push({ where, problem: '<style> not directly in the scope element' });
          styleText = '';
        }
        stack.push(name);
        for (const [attr, value] of Object.entries(attribs)) {
          if (!GLOBAL_ATTRIBUTES.includes(attr) && !(ATTRIBUTES[name] ?? []).includes(attr))
            out.push({ where, problem: `attribute ${attr}="${value}"` });
          if (attr === 'href' && !LINK.test(value)) out.push({ where, problem: `link ${value}` });
          if (attr === 'src' && !IMAGE.test(value)) out.push({ where, problem: `image ${value}` });
          if (attr === 'style') out.push(...checkInlineStyle(value, `${where} style`));
          if (attr === 'class' && !wrapper)
            for (const c of value.split(/\s+/)) if (!/^m-[\w-]+$/.test(c)) out.push({ where, problem: `class ${c}` });
        }
        if (name === 'a' && (attribs.rel !== 'noopener noreferrer nofollow' || attribs.target !== '_blank'))
          out.push({ where, problem: 'link without rel/target' });
      },
      ontext(text) {
        if (styleText !== null) styleText += text;
      },
      onclosetag(name) {
        stack.pop();
        if (name === 'style' && styleText !== null) {
          out.push(...checkStyleSheet(styleText, scope));
          styleText = null;
        }
      },
      oncomment: () => out.push({ where: 'comment', problem: 'comment kept' }),
      onprocessinginstruction: (name) => out.push({ where: name, problem: 'processing instruction or doctype kept' }),
      oncdatastart: () => out.push({ where: 'CDATA', problem: 'CDATA kept' }),
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  const forbidden = FORBIDDEN_TAG.exec(html);
  if (forbidden) out.push({ where: 'raw output', problem: `markup ${forbidden[0]}` });
  // Attribute values are quoted with " by the sanitizer and hold no " or >: without them, a tag
  // shows every attribute name it has.
  for (const tag of html.match(/<[a-z][^>]*>/gi) ?? []) {
    const names = tag.replace(/="[^"]*"/g, '');
    if (/\son[a-z]*\s*=?/i.test(names)) out.push({ where: 'raw output', problem: `event handler in ${tag}` });
    if (/=\s*[^"\s]/.test(tag.replace(/="[^"]*"/g, ''))) out.push({ where: 'raw output', problem: `unquoted attribute in ${tag}` });
  }
  return out;
}
