// The mail HTML sanitizer (lib/scan sanitizeMailHtml; docs/SECURITY.md, HTML mail): any text an
// HTML part can hold. It is designed never to throw (a body it cannot make sense of comes back as
// text or empty), so every exception is a finding. Invariants: the output passes the independent
// allowlist of test/security/sanitizer-oracle.ts, and so does the output cleaned a second time
// (what a reply, a forward or a draft does with it); both cleanings together stay within a CPU-time
// bound (the body is cleaned again on every read, so a slow input is a denial of service).
//
// Inputs go up to the engine's 64 KB: safeUrl trims leading and trailing spaces and control
// characters with an index scan, linear in a URL with a long run of them inside (a trimming regex is
// quadratic there: `<a href="x` + 60 000 spaces + `x">` takes seconds).
import fc from 'fast-check';
import { sanitizeMailHtml } from '../../../lib/scan/index.js';
import { inspectSanitized, type Finding } from '../../security/sanitizer-oracle.js';
import { VECTORS } from '../../security/fixtures/xss/vectors.js';
import { check, type FuzzTarget } from '../target.js';

/** CPU time (user + system, ms) the two cleanings of one input (≤ maxLength) may take. */
const CPU_LIMIT_MS = 2000;

/**
 * Findings of this target in lib/scan that are reported but open (remove an entry with its fix;
 * nothing else is let through). Each matches one oracle finding exactly. Empty: none is open. Fixed
 * ones keep a case in test/security/sanitizer.test.ts and sanitizer-browser.test.ts. The oracle lets a
 * script word through as a bare identifier or inside an https url() path (sanitizer-oracle.ts
 * CSS_VALUE_WORDS): neither can act.
 */
const KNOWN: { what: string; is: (f: Finding) => boolean }[] = [];

const problems = (html: string) => inspectSanitized(html).filter((f) => !KNOWN.some((k) => k.is(f)));

const TAG = fc.constantFrom(
  'script',
  'style',
  'svg',
  'math',
  'mtext',
  'mglyph',
  'mi',
  'a',
  'img',
  'image',
  'p',
  'div',
  'span',
  'font',
  'center',
  'b',
  'table',
  'tr',
  'td',
  'li',
  'iframe',
  'noscript',
  'noembed',
  'noframes',
  'template',
  'textarea',
  'title',
  'option',
  'select',
  'form',
  'object',
  'embed',
  'base',
  'meta',
  'link',
  'xmp',
  'listing',
  'plaintext',
  'foreignObject',
  'desc',
  'html',
  'head',
  'body',
  'frameset',
  'style/',
  'A',
  'IMG',
  'STYLE',
  'ScRiPt',
);
const ATTR = fc.constantFrom(
  'href',
  'src',
  'style',
  'class',
  'onerror',
  'onload',
  'onmouseover',
  'srcset',
  'background',
  'xlink:href',
  'formaction',
  'id',
  'name',
  'action',
  'poster',
  'http-equiv',
  'content',
  'title',
  'alt',
  'width',
  'bgcolor',
  'align',
  'rel',
  'target',
  'lang',
  'dir',
  'color',
  'face',
  'HREF',
  'Style',
  'on',
  'x/',
  '"',
  '',
);
const NOISE = fc.constantFrom(
  '',
  ' ',
  '\t',
  '\n',
  '\r\n',
  '\u0000',
  '\u0001',
  '\u000b',
  '\u00a0',
  '\u2028',
  '\u200b',
  '\ufeff',
  '&#x09;',
  '&#10;',
  '&Tab;',
  '&NewLine;',
  '&#0000106',
  '%20',
);
const SCHEME = fc.constantFrom(
  'javascript',
  'JaVaScRiPt',
  'jav&#x09;ascript',
  'java\tscript',
  'javascript&colon;',
  'vbscript',
  'data',
  'DATA',
  'https',
  'http',
  'mailto',
  'cid',
  'file',
  'ftp',
  '',
);
const REST = fc.constantFrom(
  ':alert(1)',
  '://ok.example/a.png',
  '://ok.example/?a="b"&c=<d>',
  ':image/png;base64,iVBORw0KGgo=',
  ':image/svg+xml;base64,PHN2Zz4=',
  ':text/html,<script>alert(1)</script>',
  ':a@b.example',
  ':part1@x',
  '//evil.example/x',
  '/relative',
  '#frag',
  '',
  ':',
  '://',
  '://[::1]:80/',
);
const URL_VALUE = fc.tuple(NOISE, SCHEME, REST, NOISE).map(([a, s, r, b]) => `${a}${s}${r}${b}`);

const CSS_PROP = fc.constantFrom(
  'color',
  'background',
  'background-image',
  'width',
  'margin',
  'margin-top',
  'font-family',
  'font',
  'border',
  'display',
  'position',
  'behavior',
  '-moz-binding',
  'list-style-image',
  'content',
  '--x',
  'b\\65havior',
  '-\\6doz-binding',
  'text-indent',
  'outline',
  'COLOR',
  'x',
);
const CSS_VALUE_PART = fc.constantFrom(
  'red',
  '#fff',
  '#12345',
  'rgb(1, 2, 3)',
  'rgb(1,2',
  '10px',
  '-500px',
  '1e3px',
  '100%',
  '0',
  'auto',
  'expression(alert(1))',
  'expr\\ession(1)',
  'expr/**/ession(1)',
  '\\65 xpression(1)',
  'url(https://ok.example/a.png)',
  'url("https://ok.example/a b.png")',
  'url(javascript:alert(1))',
  'url(j\\61vascript:x)',
  'url(data:image/png;base64,iVBO)',
  'url(cid:logo)',
  'url(',
  ')',
  'var(--x)',
  'calc(1px + 2px)',
  "'Helvetica Neue'",
  '"a<b"',
  'sans-serif',
  ',',
  '/',
  '!important',
  '\\',
  '/*',
  '*/',
  ';',
  '}',
  '{',
  '"',
  "'",
);
const CSS_VALUE = fc.array(CSS_VALUE_PART, { minLength: 1, maxLength: 5 }).map((p) => p.join(' '));
const DECL = fc.tuple(CSS_PROP, CSS_VALUE).map(([p, v]) => `${p}:${v}`);
const DECLS = fc.array(DECL, { maxLength: 4 }).map((d) => d.join(';'));
const SELECTOR = fc
  .array(
    fc.constantFrom(
      'p',
      '*',
      'body',
      'html',
      ':root',
      '.x',
      '.m-x',
      '.svcmail-0123456789abcdef',
      '#app',
      '[class]',
      'input[value^="a"]',
      'a:hover',
      'a::after',
      ':not(.y)',
      ':has(body)',
      'tr:nth-child(2n+1)',
      'td',
      '>',
      '+',
      '~',
      ' ',
      ',',
      '\\61',
      '/**/',
      '&',
    ),
    { minLength: 1, maxLength: 5 },
  )
  .map((p) => p.join(''));
const MEDIA = fc.constantFrom(
  'screen',
  'print',
  'only screen and (max-width: 600px)',
  '(prefers-color-scheme: dark)',
  'screen and (-moz-evil: url(x))',
  'all and (min-width:1px) { }',
  '',
);
const RULE = fc.oneof(
  fc.tuple(SELECTOR, DECLS).map(([s, d]) => `${s}{${d}}`),
  fc.tuple(MEDIA, SELECTOR, DECLS).map(([m, s, d]) => `@media ${m}{${s}{${d}}}`),
  fc.constantFrom(
    '@import url(https://evil.example/x.css);',
    '@\\69mport "https://evil.example/y.css";',
    '@font-face{font-family:x;src:url(https://evil.example/f)}',
    '@charset "UTF-7";',
    '@namespace svg url(http://www.w3.org/2000/svg);',
    '@supports (display:grid){p{color:red}}',
    '@keyframes k{from{color:red}}',
    '<!--',
    '-->',
    '</style>',
    '</style ><img src=x onerror=alert(1)>',
  ),
  fc.tuple(SELECTOR, DECLS, SELECTOR).map(([s, d, t]) => `${s}{${d}; ${t}{color:red}}`),
);
const STYLESHEET = fc.array(RULE, { maxLength: 6 }).map((r) => `<style>${r.join(' ')}</style>`);

const VALUE = fc.oneof(
  URL_VALUE,
  DECLS,
  fc.constantFrom(
    'x',
    'ok m-ok svcmail-0123456789abcdef 1bad x:y',
    'alert(1)',
    '"><script>alert(1)</script>',
    '0;url=javascript:alert(1)',
    '</style><img src=x onerror=alert(1)>',
  ),
);
const QUOTE = fc.constantFrom('"', "'", '', '`');
const ATTRIBUTE = fc
  .tuple(ATTR, VALUE, QUOTE, fc.constantFrom(' ', '/', '\n', ''))
  .map(([n, v, q, sep]) => `${sep || ' '}${n}=${q}${v}${q}`);
const OPEN = fc
  .tuple(TAG, fc.array(ATTRIBUTE, { maxLength: 4 }), fc.constantFrom('>', '/>', ' >', ''))
  .map(([t, a, end]) => `<${t}${a.join('')}${end}`);
const TEXT = fc.constantFrom(
  'hi',
  'Hello, world',
  '<',
  '>',
  '&',
  '&amp;',
  '&lt;script&gt;',
  '&#0;',
  '<!--',
  '-->',
  '--!>',
  '<![CDATA[',
  ']]>',
  '<?xml x?>',
  '<!DOCTYPE html>',
  '"',
  "'",
  '`',
  '\u0000',
  ' ',
  '\u00a0',
);
/** A run of one character or token: long attribute values, deep nesting, many siblings. */
const RUN = fc
  .tuple(
    fc.constantFrom(' ', '\t', '\u0001', 'a', '<b>', '<div>', '</p>', '&#x09;', '\\', '(', '<a href="x', '"', 'url(', '.a ', '{', '}'),
    fc.integer({ min: 50, max: 30000 }),
  )
  .map(([c, n]) => c.repeat(Math.max(1, Math.floor(n / c.length))));
const VECTOR = fc.constantFrom(...VECTORS.map((x) => x.payload));

const PIECE = fc.oneof(
  { arbitrary: OPEN, weight: 6 },
  { arbitrary: TAG.map((t) => `</${t}>`), weight: 3 },
  { arbitrary: TEXT, weight: 3 },
  { arbitrary: STYLESHEET, weight: 2 },
  { arbitrary: VECTOR, weight: 2 },
  { arbitrary: RUN, weight: 1 },
);

const target: FuzzTarget = {
  name: 'sanitize',
  expected: () => false,
  generate: fc.array(PIECE, { maxLength: 30 }).map((p) => Buffer.from(p.join(''), 'utf8')),
  dictionary: [
    '<style>',
    '</style>',
    '<a href="',
    '<img src="',
    ' style="',
    ' class="',
    ' onerror=',
    'javascript:',
    'data:image/png;base64,',
    'data:text/html,',
    '&#x09;',
    '&colon;',
    '\\69',
    '\\',
    'expression(',
    'url(',
    '@import ',
    '@media screen{',
    '}',
    '{',
    ';',
    '<svg>',
    '<math>',
    '<mtext>',
    '<template>',
    '<noscript>',
    '<!--',
    '-->',
    '<![CDATA[',
    '">',
    "'",
    '`',
    'svcmail-0123456789abcdef',
    'm-',
    '<div class="svcmail-0123456789abcdef">',
    '\u0000',
    '\u2028',
  ],
  fuzz(data) {
    const html = data.toString('utf8');
    const began = process.cpuUsage();
    const once = sanitizeMailHtml(html);
    const twice = sanitizeMailHtml(once);
    const spent = process.cpuUsage(began);
    const ms = (spent.user + spent.system) / 1000;
    check(typeof once === 'string' && typeof twice === 'string', 'the sanitizer answers text');
    check(ms <= CPU_LIMIT_MS, `cleaning ${html.length} characters twice took ${Math.round(ms)} ms of CPU (limit ${CPU_LIMIT_MS})`);
    const first = problems(once);
    check(
      !first.length,
      `the output breaks the allowlist: ${first
        .slice(0, 3)
        .map((f) => `${f.where}: ${f.problem}`)
        .join(' | ')}`,
    );
    const second = problems(twice);
    check(
      !second.length,
      `the output cleaned again breaks the allowlist: ${second
        .slice(0, 3)
        .map((f) => `${f.where}: ${f.problem}`)
        .join(' | ')}`,
    );
  },
};
export default target;
