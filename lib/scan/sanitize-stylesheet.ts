// `<style>` blocks and `class` attributes of mail HTML.
//
// A newsletter's `<style>` block is kept, because real mail lays itself out with class rules and
// media queries, but only as a new stylesheet written from the parsed, checked parts of the old
// one (postcss parses it; the original text is never copied):
//   - rules: every selector is parsed here and rebuilt from type names, `*`, classes, a few
//     structural and link pseudo-classes and the four combinators. Attribute and id selectors,
//     pseudo-elements, :not()/:has()/:is() and escapes drop the selector. Declarations pass
//     sanitize-css.ts.
//   - at-rules: `@media` keeps its checked rules when its query is built from known media types
//     and features; `@import`, `@font-face`, `@charset`, `@namespace`, `@keyframes`, `@supports`,
//     `@page`, `@layer` and every other at-rule go, as do rules nested in rules.
//   - scope: a `<style>` element applies to the whole document it is put in, so every selector is
//     prefixed with the message's scope class (`.svcmail-<hash> …`; the sanitizer wraps the body in
//     one element of that class). A rule therefore only reaches the message's own elements, never
//     the application around it or another message on the same page; a leading `html`, `body` or
//     `:root` stands for the scope element itself.
//   - classes: every class name of the message becomes `m-<name>`, in `class` attributes and in
//     selectors alike, so the message's rules keep matching its own elements while neither the
//     message's class attributes nor its rules can name a class of the application (whose class
//     names never start with `m-` or `svcmail-`). A name that already starts with `m-` is kept, so
//     HTML the sanitizer wrote once (a draft, a quoted message) reads the same when cleaned again.

import postcss from 'postcss';
import { cleanDeclaration } from './sanitize-css.js';

export const CLASS_PREFIX = 'm-';
const CLASS_NAME = /^-?[_a-zA-Z][_a-zA-Z0-9-]*$/;

/** A message's class name in the message's namespace, or null for a name we do not keep. */
export function scopedClass(name: string): string | null {
  if (!CLASS_NAME.test(name)) return null;
  // The bare prefix `m-` is a name like any other (`m-m-`): only a name after the prefix is kept as it is.
  return name.startsWith(CLASS_PREFIX) && name.length > CLASS_PREFIX.length ? name : CLASS_PREFIX + name;
}

/** A `class` attribute with every name in the message's namespace (`''` when none is left). */
export function cleanClassAttribute(value: string): string {
  const names = value
    .split(/[ \t\n\f\r]+/)
    .filter(Boolean)
    .map(scopedClass)
    .filter((n): n is string => n !== null);
  return [...new Set(names)].join(' ');
}

const PSEUDO_CLASSES = new Set([
  'hover',
  'active',
  'focus',
  'link',
  'visited',
  'first-child',
  'last-child',
  'only-child',
  'first-of-type',
  'last-of-type',
  'only-of-type',
]);
const NTH_PSEUDO = new Set(['nth-child', 'nth-last-child', 'nth-of-type', 'nth-last-of-type']);
const NTH_ARG = /^(?:odd|even|[+-]?\d*n(?:[+-]\d+)?|[+-]?\d+)$/i;
const ROOTS = new Set(['html', 'body', ':root']);

/** One compound selector (`td.m-x:hover`) rebuilt, or null. */
function compound(text: string): string | null {
  const m = /^(\*|[a-zA-Z][a-zA-Z0-9-]*)?((?:[.:][^.:]+)*)$/.exec(text);
  if (!m) return null;
  let out = m[1]?.toLowerCase() ?? '';
  for (const part of m[2].match(/[.:][^.:]+/g) ?? []) {
    const body = part.slice(1);
    if (part[0] === '.') {
      const cls = scopedClass(body);
      if (cls === null) return null;
      out += `.${cls}`;
      continue;
    }
    const nth = /^([a-z-]+)\(([^()]*)\)$/i.exec(body);
    if (nth && NTH_PSEUDO.has(nth[1].toLowerCase()) && NTH_ARG.test(nth[2].replace(/\s+/g, '')))
      out += `:${nth[1].toLowerCase()}(${nth[2].replace(/\s+/g, '').toLowerCase()})`;
    else if (PSEUDO_CLASSES.has(body.toLowerCase())) out += `:${body.toLowerCase()}`;
    else return null;
  }
  return out === '' ? null : out;
}

/** A complex selector as compounds and combinators (`' '`, `>`, `+`, `~`), or null. */
function splitSelector(selector: string): string[] | null {
  const parts: string[] = [];
  let cur = '';
  let depth = 0;
  let comb: string | null = null;
  for (const ch of selector.trim()) {
    if (depth === 0 && /[\s>+~]/.test(ch)) {
      if (cur) {
        parts.push(cur);
        cur = '';
        comb = ' ';
      } else if (comb === null) {
        return null; // a combinator before any compound
      }
      if (ch !== ' ' && !/\s/.test(ch)) {
        if (comb !== ' ') return null; // two combinators in a row
        comb = ch;
      }
      continue;
    }
    if (ch === '(') depth++;
    if (ch === ')' && --depth < 0) return null;
    if (comb !== null && !cur) parts.push(comb);
    cur += ch;
  }
  if (depth !== 0 || !cur) return null; // unbalanced, or ends in a combinator
  parts.push(cur);
  return parts;
}

/** One complex selector rebuilt and scoped, or null when any part of it is not allowed. */
export function scopeSelector(selector: string, scope: string): string | null {
  if (!/^[\w\s.:*>+~()-]+$/.test(selector)) return null; // no escapes, quotes, brackets, ids, comments
  const parts = splitSelector(selector);
  if (!parts) return null;
  const built: string[] = [];
  for (const p of parts) {
    if (p === ' ' || p === '>' || p === '+' || p === '~') {
      built.push(p);
      continue;
    }
    const c = p.toLowerCase() === ':root' ? ':root' : compound(p);
    if (c === null) return null;
    built.push(c);
  }
  // A leading html/body/:root (with what joins it to the next part) is the scope element itself.
  let lead = ' ';
  while (built.length && ROOTS.has(built[0])) {
    built.shift();
    const joint = built.shift();
    if (joint === '+' || joint === '~') return null;
    lead = joint === '>' ? ' > ' : ' ';
  }
  if (built.some((b) => ROOTS.has(b))) return null;
  const text = built.map((b) => (/^[>+~]$/.test(b) ? ` ${b} ` : b)).join('');
  return text ? `.${scope}${lead}${text}` : `.${scope}`;
}

const MEDIA_WORDS = new Set(['only', 'not', 'and', 'all', 'screen', 'print']);
const MEDIA_FEATURES = new Set([
  'width',
  'min-width',
  'max-width',
  'height',
  'min-height',
  'max-height',
  'device-width',
  'min-device-width',
  'max-device-width',
  'orientation',
  'prefers-color-scheme',
  'min-resolution',
  'max-resolution',
  '-webkit-min-device-pixel-ratio',
  '-webkit-max-device-pixel-ratio',
  'min-device-pixel-ratio',
]);

/** A media query list rebuilt from known types and features, or null. */
export function cleanMediaQuery(params: string): string | null {
  const queries = params.split(',').map((q) => q.trim());
  const out: string[] = [];
  for (const q of queries) {
    const parts = q.match(/\([^()]*\)|[^\s()]+/g);
    if (!parts || parts.join('').replace(/\s/g, '') !== q.replace(/\s/g, '')) return null;
    const built: string[] = [];
    for (const p of parts) {
      if (MEDIA_WORDS.has(p.toLowerCase())) {
        built.push(p.toLowerCase());
        continue;
      }
      const f = /^\(\s*([a-z-]+)\s*(?::\s*([\w.]+|\d+\/\d+)\s*)?\)$/i.exec(p);
      if (!f || !MEDIA_FEATURES.has(f[1].toLowerCase())) return null;
      if (f[2] !== undefined && !/^(?:[a-z-]+|\d+(?:\.\d+)?(?:px|em|rem|dpi|dppx|x)?|\d+\/\d+)$/i.test(f[2])) return null;
      built.push(f[2] === undefined ? `(${f[1].toLowerCase()})` : `(${f[1].toLowerCase()}:${f[2].toLowerCase()})`);
    }
    out.push(built.join(' '));
  }
  return out.length ? out.join(',') : null;
}

function cleanRule(rule: postcss.Rule, scope: string): string | null {
  const selectors = rule.selectors.map((s) => scopeSelector(s, scope)).filter((s): s is string => s !== null);
  if (!selectors.length) return null;
  const decls: string[] = [];
  for (const node of rule.nodes) {
    if (node.type !== 'decl') continue; // nested rules and at-rules go
    const d = cleanDeclaration(node.prop, node.value, node.important);
    if (d !== null) decls.push(d);
  }
  return decls.length ? `${[...new Set(selectors)].join(',')}{${decls.join(';')}}` : null;
}

/**
 * A stylesheet from a message's `<style>` block, rebuilt from its allowed rules with every
 * selector under `.${scope}` (`''` when nothing is left or the CSS does not parse).
 */
export function cleanStyleSheet(css: string, scope: string): string {
  let root: postcss.Root;
  try {
    // CDO/CDC (`<!--`, `-->`) are how old mail hid CSS from old clients; CSS ignores them at top level.
    root = postcss.parse(css.replace(/<!--|-->/g, ' '));
  } catch {
    return '';
  }
  const out: string[] = [];
  for (const node of root.nodes) {
    if (node.type === 'rule') {
      const r = cleanRule(node, scope);
      if (r !== null) out.push(r);
    } else if (node.type === 'atrule' && node.name.toLowerCase() === 'media' && node.nodes) {
      const query = cleanMediaQuery(node.params);
      if (query === null) continue;
      const rules = node.nodes
        .filter((n): n is postcss.Rule => n.type === 'rule')
        .map((r) => cleanRule(r, scope))
        .filter((r): r is string => r !== null);
      if (rules.length) out.push(`@media ${query}{${rules.join('')}}`);
    }
  }
  return out.join('\n');
}
