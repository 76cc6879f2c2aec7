// The mail HTML sanitizer in a real browser (docs/SECURITY.md, HTML mail): every vector of the XSS
// corpus (fixtures/xss/vectors.ts) and the newsletter fixture, sanitized, is served as a real
// document by a loopback HTTP server — no Content-Security-Policy, so only the sanitizer stands
// between the payload and the page — and rendered by Debian Chromium (playwright-core). For each
// one:
//   - no script runs: alert/confirm/prompt/print/open are traps, every element gets the events its
//     handlers could listen for and a click (links to http(s)/mailto are stopped before they leave
//     the page, their handlers still run; anything else is followed), the mouse sweeps the message;
//     no dialog, popup, frame or navigation happens;
//   - nothing is fetched but what the sanitized markup declares on the places the sanitizer allows
//     (an <img src>, a url() in a kept style): every other request (an @import, a <link>, a meta
//     refresh, srcset, background=, a relative URL resolved against this page) is a failure. Requests
//     for other hosts are aborted and the browser resolves no name but 127.0.0.1;
//   - the live DOM, as Chromium parsed it (the parse that counts, mXSS included), has no script-
//     capable element or handler, no link to javascript:/data:/vbscript:, only http(s)/cid/raster
//     data: images, and the message stays inside its container element;
//   - nothing outside the message changes: the computed style of every property of the page's own
//     elements (html, body, the application around the message, its pseudo-elements, a hovered link)
//     and of another already-sanitized message on the page (its m- classes are the same namespace)
//     is the same as on the page without the message, the page above the message keeps its
//     geometry, and no box or text of the message is painted above or left of its container. A
//     message with a stylesheet is looked at wide, narrow (dark) and in print, so that its @media
//     rules apply; one without cannot reach other elements, and its page is compared in outline.
// Unsanitized controls show the harness sees each kind of failure.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sanitizeMailHtml } from '../../lib/scan/index.js';
import { requirePrograms } from '../helpers/peers.js';
import { VECTORS } from './fixtures/xss/vectors.js';

const CHROMIUM = '/usr/bin/chromium';
const haveBrowser = requirePrograms('chromium');
const NEWSLETTER = readFileSync(new URL('./fixtures/xss/newsletter.html', import.meta.url), 'utf8');
const CASES = [
  ...VECTORS.map((v) => ({ title: `${v.source}: ${v.title}`, payload: v.payload })),
  { title: 'fixture: newsletter.html', payload: NEWSLETTER },
];
const PAGES_AT_ONCE = 2;
// A stylesheet is looked at in each of these, so that its @media rules (width, orientation, colour
// scheme, print: the features the sanitizer keeps) apply in one of them.
const VIEWS = [
  { name: 'wide', viewport: { width: 1000, height: 800 }, media: 'screen', colorScheme: 'light' },
  { name: 'narrow', viewport: { width: 480, height: 800 }, media: 'screen', colorScheme: 'dark' },
  { name: 'print', viewport: { width: 1000, height: 800 }, media: 'print', colorScheme: 'light' },
] as const;
type View = (typeof VIEWS)[number];

// The application around the message. Its class names are the ones the corpus's rules name (an
// unscoped rule would reach them); the neighbour is another message the sanitizer wrote, whose
// m- classes share the namespace of every message (only the scope class tells them apart).
const APP_CSS =
  'body{margin:8px;font:16px/1.4 sans-serif;color:#111;background:#fff} #app-chrome,#app-footer{width:600px;padding:4px;border:1px solid #999;background:#eef}' +
  ' #message{width:700px;margin:8px 0;border:1px dashed #ccc} a{color:#00e} a:hover{color:#e00} ul{list-style:disc}';
const CLASSES = 'x y z a b c d promo XSS container header headline column button footer';
const APP =
  `<div id="app-chrome" data-probe="chrome" class="${CLASSES}"><p class="${CLASSES}" data-probe="chrome-p">Inbox</p><a id="chrome-link" href="#token" class="${CLASSES}" data-probe="chrome-a">Settings</a>` +
  `<table class="${CLASSES}" data-probe="chrome-table"><tr class="${CLASSES}" data-probe="chrome-tr"><td class="${CLASSES}" data-probe="chrome-td">cell</td></tr></table>` +
  `<ul data-probe="chrome-ul"><li class="${CLASSES}" data-probe="chrome-li">item</li></ul><span class="${CLASSES}" data-probe="chrome-span">span</span>` +
  '<div id="app" data-probe="chrome-app"><input value="abc" data-probe="chrome-input"></div></div>';
const M = CLASSES.split(' ')
  .map((c) => `m-${c}`)
  .join(' ');
const NEIGHBOUR =
  `<div id="neighbour" data-probe="neighbour"><div class="svcmail-0000000000000000" data-probe="neighbour-scope"><p class="${M} m-already" data-probe="neighbour-p">another message</p>` +
  `<a href="#n" class="${M}" data-probe="neighbour-a">link</a><table class="${M}" data-probe="neighbour-table"><tr class="${M}"><td class="${M}" data-probe="neighbour-td">cell</td></tr></table></div></div>`;
const FOOTER = '<div id="app-footer" data-probe="footer"><p data-probe="footer-p">footer</p></div>';

// Runs before the message is parsed: the functions a payload calls become traps.
const SENTINEL = `(() => {
  const pwned = [];
  Object.defineProperty(window, '__pwned', { value: pwned });
  for (const name of ['alert', 'confirm', 'prompt', 'print', 'open']) window[name] = (...args) => { pwned.push(name + '(' + args.map(String).join(',') + ')'); };
  document.addEventListener('click', (e) => {
    const a = e.target instanceof Element ? e.target.closest('a[href]') : null;
    if (a && /^(https?|mailto):$/.test(a.protocol)) e.preventDefault();
  }, true);
})();`;

const page = (message: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>message</title><style>${APP_CSS}</style>` +
  `<script>${SENTINEL}</script></head><body>${APP}<div id="message" data-probe="message">${message}</div><div id="after-message"></div>${NEIGHBOUR}${FOOTER}</body></html>`;

// In the page: the outline and geometry of the page around the message and, unless `detail` is
// 'outline', the computed style of every element the message must not touch (every property but the
// layout-dependent ones, whose resolved value is the used size), one hash per element and
// pseudo-element, with the properties of those `detail` names.
const LAYOUT = "['width', 'height', 'inline-size', 'block-size', 'transform-origin', 'perspective-origin']";
const SNAPSHOT = (detail: 'all' | 'outline' | string[]) => `(() => {
  const detail = ${JSON.stringify(detail)};
  const skip = new Set(${LAYOUT});
  const hashes = {};
  const props = {};
  // Listing a pseudo-element's every property costs ~10 ms in Chromium; these are the ones that show.
  const generated = ['content', 'display', 'visibility', 'color', 'background-color', 'background-image', 'font-size', 'opacity', 'list-style-type', 'position'];
  const read = (key, el, pseudo) => {
    const cs = getComputedStyle(el, pseudo);
    const o = [];
    if (pseudo) for (const p of generated) o.push(p + ': ' + cs.getPropertyValue(p));
    else for (let i = 0; i < cs.length; i++) if (!skip.has(cs[i])) o.push(cs[i] + ': ' + cs.getPropertyValue(cs[i]));
    const text = o.join('\\n');
    let h = 2166136261;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    hashes[key] = (h >>> 0).toString(16) + ':' + text.length;
    if (detail === 'all' || detail.includes(key)) props[key] = o;
  };
  for (const el of detail === 'outline' ? [] : [document.documentElement, document.body, ...document.querySelectorAll('[data-probe]')]) {
    const key = el.dataset.probe ?? el.localName;
    read(key, el, null);
    for (const p of ['::before', '::after', '::marker']) read(key + p, el, p);
  }
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].map(Math.round).join(','); };
  const geometry = {};
  for (const el of document.querySelectorAll('#app-chrome, #app-chrome [data-probe]')) geometry[el.dataset.probe] = box(el);
  for (const el of document.querySelectorAll('#neighbour, #neighbour [data-probe], #app-footer, #app-footer [data-probe]')) { const r = el.getBoundingClientRect(); geometry[el.dataset.probe] = 'x ' + Math.round(r.x) + ' w ' + Math.round(r.width); }
  return { hashes, props, geometry, body: [...document.body.children].map((e) => e.id), head: [...document.head.children].map((e) => e.localName) };
})()`;

/** The application's link, hovered: a message's `:hover` rule must not reach it either. */
const HOVERED = `(() => { const link = document.getElementById('chrome-link'); const cs = getComputedStyle(link); const skip = new Set(${LAYOUT}); const o = [];
  for (let i = 0; i < cs.length; i++) if (!skip.has(cs[i])) o.push(cs[i] + ': ' + cs.getPropertyValue(cs[i])); return link.matches(':hover') ? o : ['not hovered']; })()`;

// Every element of the message gets the events an inline handler could wait for, and a click.
const INTERACT = `(async () => {
  const types = ['mouseover', 'mouseenter', 'mousemove', 'mousedown', 'mouseup', 'mouseout', 'mouseleave', 'pointerover', 'pointerenter', 'pointerdown', 'pointerup', 'pointermove',
    'focus', 'focusin', 'blur', 'dblclick', 'contextmenu', 'keydown', 'keyup', 'input', 'change', 'submit', 'wheel', 'scroll', 'animationstart', 'animationend', 'transitionend', 'toggle', 'load', 'error'];
  const root = document.getElementById('message');
  for (const el of root ? root.querySelectorAll('*') : []) {
    for (const t of types) el.dispatchEvent(new Event(t, { bubbles: true }));
    el.focus?.();
    el.click?.();
  }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 10))));
})()`;

// The live DOM as Chromium built it: problems, and the URLs the message may load.
const INSPECT = `(() => {
  const problems = [];
  const declared = [];
  const root = document.getElementById('message');
  const forbidden = new Set(['script', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'form', 'input', 'button', 'textarea', 'select', 'option', 'base', 'meta', 'link',
    'svg', 'math', 'template', 'noscript', 'video', 'audio', 'source', 'picture', 'track', 'portal', 'fencedframe', 'dialog', 'slot', 'image', 'isindex', 'bgsound', 'marquee']);
  const urlish = ['src', 'href', 'srcset', 'background', 'poster', 'action', 'formaction', 'xlink:href', 'data', 'codebase', 'dynsrc', 'lowsrc', 'ping', 'longdesc', 'cite', 'usemap', 'srcdoc', 'manifest', 'archive', 'classid', 'profile'];
  if (document.scripts.length !== 1 || document.scripts[0].parentNode !== document.head) problems.push('dom: ' + document.scripts.length + ' script elements in the document');
  if (window.frames.length) problems.push('dom: ' + window.frames.length + ' frames in the document');
  const attrs = (el) => [...el.attributes].map((a) => a.name + '=' + a.value).join(' ');
  if (attrs(document.body) !== '' || attrs(document.documentElement) !== 'lang=en') problems.push('dom: the message set attributes of the page: <html ' + attrs(document.documentElement) + '><body ' + attrs(document.body) + '>');
  for (const el of root.querySelectorAll('*')) {
    const tag = el.localName;
    if (el.namespaceURI !== 'http://www.w3.org/1999/xhtml' || forbidden.has(tag)) problems.push('dom: element <' + tag + '> (' + el.namespaceURI + ')');
    if (el.shadowRoot) problems.push('dom: shadow root on <' + tag + '>');
    if (tag === 'style' && !(el.parentElement.parentElement === root && el.parentElement.firstElementChild === el && /^svcmail-[0-9a-f]{16}$/.test(el.parentElement.className))) problems.push('dom: <style> outside the scope element');
    for (const { name, value } of el.attributes) {
      // DOM clobbering: an id or name that becomes a property of window or document.
      if ((name === 'id' || name === 'name') && value && [window, document].some((o) => { try { const v = o[value]; return v === el || (v instanceof HTMLCollection && [...v].includes(el)); } catch { return false; } })) problems.push('dom: ' + name + '="' + value + '" on <' + tag + '> is a property of window or document');
      if (/^on/i.test(name)) problems.push('dom: handler ' + name + '="' + value + '" on <' + tag + '>');
      if (urlish.includes(name.toLowerCase()) && !((tag === 'a' && name === 'href') || (tag === 'img' && name === 'src'))) problems.push('dom: URL attribute ' + name + '="' + value + '" on <' + tag + '>');
    }
    if (tag === 'a' && el.hasAttribute('href')) {
      const own = el.origin === location.origin && el.pathname === location.pathname && el.search === location.search;
      if (!/^(https?|mailto):$/.test(el.protocol) || (own && !el.getAttribute('href').trim().startsWith('#')) || (el.origin === location.origin && !own)) problems.push('dom: link ' + el.href);
    }
    if (tag === 'img' && el.hasAttribute('src')) {
      const ok = /^(https?|cid):/i.test(el.src) || /^data:image\\/(png|gif|jpe?g|webp);base64,/i.test(el.src);
      if (!ok || el.src.startsWith(location.origin)) problems.push('dom: image ' + el.src.slice(0, 120));
      else declared.push(el.src);
    }
    // url()s of background declarations, as Chromium parsed them (no @import, @font-face or other property).
    const backgrounds = (style) => { for (const prop of style) if (prop.startsWith('background')) for (const [, u] of style.getPropertyValue(prop).matchAll(/url\\("([^"]*)"\\)/g)) declared.push(new URL(u, document.baseURI).href); };
    backgrounds(el.style);
    const rules = (list) => { for (const r of list) { if (r instanceof CSSStyleRule) backgrounds(r.style); else if (r instanceof CSSMediaRule) rules(r.cssRules); } };
    if (tag === 'style' && el.sheet) rules(el.sheet.cssRules);
  }
  // Painted where it belongs: no box or line of text of the message above or left of its container.
  const box = root.getBoundingClientRect();
  const rects = [];
  for (const el of root.querySelectorAll('*')) for (const r of el.getClientRects()) rects.push([el.localName, r]);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.data.trim() || n.parentElement.localName === 'style') continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) rects.push(['text "' + n.data.trim().slice(0, 20) + '"', r]);
  }
  for (const [what, r] of rects) if (r.width && r.height && (r.top < box.top - 0.5 || r.left < box.left - 0.5)) problems.push('geometry: ' + what + ' painted at ' + Math.round(r.left) + ',' + Math.round(r.top) + ', outside the message at ' + Math.round(box.left) + ',' + Math.round(box.top));
  return { problems, declared, pwned: [...window.__pwned], sheets: document.styleSheets.length + document.adoptedStyleSheets.length };
})()`;

interface Snapshot {
  hashes: Record<string, string>;
  props: Record<string, string[]>;
  geometry: Record<string, string>;
  body: string[];
  head: string[];
}
interface Slot {
  problems: string[];
  expected: Set<string>;
}

/** What differs from the page without a message: its outline, elements restyled or moved. */
async function differences(tab: Page, base: Snapshot, now: Snapshot, view: string): Promise<string[]> {
  const out: string[] = [];
  if (JSON.stringify(now.body) !== JSON.stringify(base.body))
    out.push(`dom: the body's children are ${now.body.join(',')} (the message left its container)`);
  if (JSON.stringify(now.head) !== JSON.stringify(base.head)) out.push(`dom: the head's children are ${now.head.join(',')}`);
  const changed = Object.keys(now.hashes).length ? Object.keys(base.hashes).filter((k) => now.hashes[k] !== base.hashes[k]) : [];
  if (changed.length) {
    const { props } = (await tab.evaluate(SNAPSHOT(changed))) as Snapshot;
    for (const key of changed) {
      const was = new Set(base.props[key]);
      const diff = (props[key] ?? ['(gone)']).filter((p) => !was.has(p));
      out.push(`scope: ${key} changed (${view}): ${diff.slice(0, 4).join('; ')}${diff.length > 4 ? ` (+${diff.length - 4})` : ''}`);
    }
  }
  for (const [key, g] of Object.entries(base.geometry))
    if (now.geometry[key] !== g) out.push(`scope: ${key} moved (${view}) from ${g} to ${now.geometry[key]}`);
  return out;
}

// Chromium renders batches of documents: on a busy two-core machine a case can pass 30 s.
describe.runIf(haveBrowser)('sanitized corpus in Chromium', { timeout: 120_000 }, () => {
  let server: Server;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext;
  let workers: Page[];
  const baseline = new Map<string, Snapshot>();
  let hoveredBaseline: string[];
  /** Where the application's link is (the page above the message keeps its geometry: checked). */
  let linkAt: [number, number];
  const docs = new Map<string, string>();
  /** The message each tab shows (its dialogs and popups), and each document still being looked at (its requests). */
  const slots = new Map<Page, Slot>();
  const byDoc = new Map<string, Slot>();
  const unattributed: string[] = [];
  const results = new Map<string, string[]>();
  /** What the last render's `probe` answered. */
  let probed: unknown;

  /** A tab whose dialogs and popups are charged to the message it shows. */
  async function newTab(): Promise<Page> {
    const tab = await context.newPage();
    tab.on('dialog', (d) => {
      (slots.get(tab)?.problems ?? unattributed).push(`script: ${d.type()} dialog "${d.message()}"`);
      void d.dismiss();
    });
    tab.on('popup', (popup) => {
      (slots.get(tab)?.problems ?? unattributed).push(`popup: a window opened (${popup.url().slice(0, 120)})`);
      void popup.close();
    });
    return tab;
  }

  async function setView(tab: Page, view: View) {
    await tab.setViewportSize(view.viewport);
    await tab.emulateMedia({ media: view.media, colorScheme: view.colorScheme });
  }

  /**
   * A page evaluation that cannot hang the test: a message that navigates the tab away (a meta refresh
   * to a blocked address) can leave Playwright waiting for a document that never comes; after 15 s
   * it counts as a failed render (a navigation problem), which is what it is.
   */
  function settled<T>(evaluation: Promise<T>): Promise<T> {
    return Promise.race([
      evaluation,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the page did not answer within 15 s')), 15_000).unref()),
    ]);
  }

  /** Renders `message` (as given: the caller sanitizes) and answers every problem seen. */
  async function render(tab: Page, id: string, message: string, probe?: string): Promise<string[]> {
    docs.set(id, page(message));
    const url = `${origin}/doc/${id}`;
    const slot: Slot = { problems: [], expected: new Set([url]) };
    slots.set(tab, slot);
    byDoc.set(url, slot);
    const onNavigated = (frame: ReturnType<Page['mainFrame']>) => {
      if (frame !== tab.mainFrame()) slot.problems.push(`navigation: a frame loaded ${frame.url().slice(0, 120)}`);
      else if (frame.url() !== url) slot.problems.push(`navigation: the page went to ${frame.url().slice(0, 120)}`);
    };
    tab.on('framenavigated', onNavigated);
    probed = undefined;
    try {
      await tab.goto(url, { waitUntil: 'load' });
      await settled(tab.evaluate(INTERACT));
      const { width, height } = tab.viewportSize()!;
      for (const [x, y] of [
        [0.1, 0.2],
        [0.9, 0.6],
      ])
        await tab.mouse.move(x * width, y * height);
      const seen = (await settled(tab.evaluate(INSPECT))) as { problems: string[]; declared: string[]; pwned: string[]; sheets: number };
      slot.problems.push(...seen.pwned.map((p) => `script: ${p}`), ...seen.problems);
      for (const u of seen.declared) slot.expected.add(u);
      // Only a stylesheet reaches elements other than the one whose style attribute it is (and its
      // descendants): without one beside the page's own, the page's styles are compared no further.
      const styled = seen.sheets !== 1;
      if (styled) {
        await tab.mouse.move(...linkAt);
        const was = new Set(hoveredBaseline);
        const changed = ((await settled(tab.evaluate(HOVERED))) as string[]).filter((p) => !was.has(p));
        if (changed.length) slot.problems.push(`scope: chrome-a:hover changed: ${changed.slice(0, 4).join('; ')}`);
        await tab.mouse.move(0, 0);
      }
      slot.problems.push(
        ...(await differences(
          tab,
          baseline.get('wide')!,
          (await settled(tab.evaluate(SNAPSHOT(styled ? [] : 'outline')))) as Snapshot,
          'wide',
        )),
      );
      if (styled) {
        for (const view of VIEWS.slice(1)) {
          await setView(tab, view);
          slot.problems.push(
            ...(await differences(tab, baseline.get(view.name)!, (await settled(tab.evaluate(SNAPSHOT([])))) as Snapshot, view.name)),
          );
        }
        await setView(tab, VIEWS[0]);
      }
      if (probe) probed = await settled(tab.evaluate(probe));
    } catch (e) {
      slot.problems.push(`navigation: rendering failed: ${(e as Error).message.split('\n')[0]}`);
    } finally {
      tab.off('framenavigated', onNavigated);
    }
    // From here on a request of this document (there should be none) counts as unattributed.
    byDoc.delete(url);
    slots.delete(tab);
    if (
      tab.url() !== url ||
      slot.problems.some((p) => p.startsWith('navigation') || (p.startsWith('request: ') && !p.startsWith(`request: ${origin}/`)))
    ) {
      // The message navigated the tab or may have started to: end that before the next document.
      for (let attempt = 1; ; attempt++) {
        try {
          await tab.goto('about:blank', { waitUntil: 'commit' });
          break;
        } catch (e) {
          await new Promise((r) => setTimeout(r, 50));
          if (tab.url() === 'about:blank') break;
          if (attempt === 3) throw e;
        }
      }
    }
    const requests = slot.problems.filter((p) => p.startsWith('request: '));
    const others = slot.problems.filter((p) => !p.startsWith('request: '));
    return [...others, ...requests.filter((r) => !slot.expected.has(r.slice('request: '.length)))];
  }

  beforeAll(async () => {
    server = createServer((req, res) => {
      const body = /^\/doc\/([\w-]+)$/.exec(req.url ?? '')?.[1];
      const html = body === undefined ? undefined : docs.get(body);
      res
        .writeHead(html === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        .end(html ?? 'not found');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      // A fresh temporary profile per launch (playwright's default); no name but 127.0.0.1 resolves.
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-default-apps',
        '--dns-prefetch-disable',
        '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      ],
    });
    context = await browser.newContext({ viewport: VIEWS[0].viewport, colorScheme: VIEWS[0].colorScheme, serviceWorkers: 'block' });
    // Every wait of Playwright's is bounded, so a page that never settles fails its own case, not the file.
    context.setDefaultTimeout(20_000);
    // Every request is seen here; one for another host never leaves the browser.
    await context.route('**/*', async (route) => {
      const req = route.request();
      // A document's own load is its own; any other request belongs to the document its tab shows.
      let slot: Slot | undefined;
      try {
        slot = byDoc.get(byDoc.has(req.url()) ? req.url() : req.frame().page().mainFrame().url());
      } catch {
        slot = undefined;
      }
      const line = `request: ${req.url().slice(0, 300)}`;
      if (slot) slot.problems.push(line);
      else unattributed.push(line);
      if (req.url().startsWith(`${origin}/`)) await route.continue();
      else await route.abort('blockedbyclient');
    });
    workers = await Promise.all(Array.from({ length: PAGES_AT_ONCE }, () => newTab()));
    // The page without a message: what must not change.
    const first = workers[0];
    docs.set('baseline', page(''));
    const baselineSlot: Slot = { problems: [], expected: new Set() };
    byDoc.set(`${origin}/doc/baseline`, baselineSlot);
    await first.goto(`${origin}/doc/baseline`);
    linkAt = (await first.evaluate(
      `(() => { const r = document.getElementById('chrome-link').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`,
    )) as [number, number];
    await first.mouse.move(...linkAt);
    hoveredBaseline = (await first.evaluate(HOVERED)) as string[];
    await first.mouse.move(0, 0);
    for (const view of VIEWS) {
      await setView(first, view);
      baseline.set(view.name, (await first.evaluate(SNAPSHOT('all'))) as Snapshot);
    }
    await setView(first, VIEWS[0]);
    expect(baselineSlot.problems).toEqual([`request: ${origin}/doc/baseline`]);
    expect(hoveredBaseline).toContain('color: rgb(238, 0, 0)');

    const todo = CASES.map((c, i) => ({ ...c, id: `v${i}` }));
    await Promise.all(
      workers.map(async (w) => {
        for (let c = todo.shift(); c; c = todo.shift()) results.set(c.title, await render(w, c.id, sanitizeMailHtml(c.payload)));
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
  });

  it('renders the whole corpus, and the baseline page is what the checks compare against', () => {
    expect(results.size).toBe(CASES.length);
    expect(CASES.length).toBeGreaterThan(150);
    const wide = baseline.get('wide')!;
    expect(wide.body).toEqual(['app-chrome', 'message', 'after-message', 'neighbour', 'app-footer']);
    expect(Object.keys(wide.hashes).length).toBeGreaterThan(80);
    // The views differ where they should: the page itself has a colour scheme and a width.
    expect(baseline.get('narrow')!.geometry).not.toEqual(wide.geometry);
    expect(unattributed).toEqual([]);
  });

  it.each(CASES.map((c) => [c.title]))('%s: no script, no unexpected request, nothing outside the message changes', (title) => {
    expect(results.get(title)).toEqual([]);
  });

  it("the newsletter's scoped rules do apply inside the message (the scope check is not vacuous)", async () => {
    const tab = workers[0];
    const probe = `(() => { const w = document.querySelector('#message > div');
      return [w.className.slice(0, 8), getComputedStyle(w).backgroundColor, getComputedStyle(w.querySelector('.m-container')).width, getComputedStyle(w.querySelector('.m-headline')).fontSize]; })()`;
    expect(await render(tab, 'newsletter-again', sanitizeMailHtml(NEWSLETTER), probe)).toEqual([]);
    const inside = probed;
    expect(inside).toEqual(['svcmail-', 'rgb(244, 244, 244)', '600px', '22px']);
  });

  // The same payloads, unsanitized: each must be seen as the kind of failure it is. A tab each, so
  // what one control starts (a refresh) cannot reach the next; a test each, so a slow machine
  // gives every control its own time.
  const CONTROLS: Array<[string, string, string[] | 'refresh']> = [
    ['c-onerror', '<img src=x onerror=alert(1)>', ['dom', 'request', 'script']],
    ['c-jslink', '<a href="javascript:alert(1)">x</a>', ['dom', 'script']],
    // Chromium itself refuses to open a data: document, so only the DOM check sees it.
    ['c-datalink', '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==" target="_blank">x</a>', ['dom']],
    ['c-handler', '<p onmouseover="alert(1)">x</p>', ['dom', 'script']],
    ['c-style', '<style>p{color:red} li::marker{content:"!"}</style><p>x</p>', ['dom', 'scope']],
    ['c-media', '<style>@media (max-width:600px){p{color:red}}</style>', ['dom', 'scope']],
    ['c-clobber', '<img name="config" src="data:image/png;base64,iVBORw0KGgo=">', ['dom']],
    ['c-scoped-neighbour', '<style>.m-x{color:red}</style>', ['dom', 'scope']],
    ['c-import', '<div class="svcmail-0123456789abcdef"><style>@import url(https://evil.example/x.css);</style></div>', ['request']],
    ['c-refresh', '<meta http-equiv="refresh" content="0;url=https://evil.example/">', 'refresh'],
    ['c-escape', '</div><p>out</p>', ['dom']],
    ['c-overlay', '<p style="margin-top:-40px">over the chrome</p>', ['geometry']],
    ['c-iframe', '<iframe srcdoc="<script>parent.alert(1)</script>"></iframe>', ['dom', 'navigation', 'script']],
  ];
  it.each(CONTROLS)('the harness sees the failure of %s (the payload unsanitized)', async (id, html, expected) => {
    const tab = await newTab();
    const seen = await render(tab, id, html);
    // Not awaited: closing a tab whose message opened dialogs can wait forever (seen in CI); the
    // browser goes at the end of the file all the same.
    void tab.close().catch(() => undefined);
    const kinds = [...new Set(seen.map((p) => p.split(':')[0]))].sort();
    expect(kinds).toEqual(expected === 'refresh' ? expect.arrayContaining(['navigation', 'request']) : expected);
  });

  // Weaknesses of lib/scan that the fuzz target (test/fuzz/targets/sanitize.ts) and trying the CSS the
  // sanitizer keeps turned up: each case must render clean.
  it('an http: URL without // goes, so Chromium cannot resolve it against the page (a request to the displaying site)', async () => {
    const html = sanitizeMailHtml('<img src="http:/api/avatar.png"><a href="http:/api/mail/messages">x</a>');
    expect(await render(workers[0], 'k-relative', html)).toEqual([]);
  });

  it("a negative text-indent goes, so the message's text is not painted left of its box (over the application)", async () => {
    const html = sanitizeMailHtml('<p style="text-indent:-250px">Pay here</p>');
    expect(await render(workers[0], 'k-indent', html)).toEqual([]);
  });

  it('a wide outline and negative letter- and word-spacing go, so nothing is painted over the application', async () => {
    const html = sanitizeMailHtml(
      '<p style="outline:300px solid red;letter-spacing:-40px;word-spacing:-200px">Pay here, over the header</p><p style="outline:1px solid red">thin</p>',
    );
    expect(html).toBe('<p>Pay here, over the header</p><p style="outline:1px solid red">thin</p>');
    expect(await render(workers[0], 'k-outline', html)).toEqual([]);
  });

  it('a negative margin without a unit goes, so a quirks-mode document does not move the message over what is above it', async () => {
    const tab = workers[0];
    await tab.setContent(
      `<div>application</div><div id="message" style="border:1px solid">${sanitizeMailHtml('<p style="margin-top:-40">over the application</p>')}</div>`,
    );
    const [mode, above] = (await tab.evaluate(
      `[document.compatMode, document.querySelector('#message p').getBoundingClientRect().top < document.getElementById('message').getBoundingClientRect().top]`,
    )) as [string, boolean];
    expect({ mode, above }).toEqual({ mode: 'BackCompat', above: false });
  });
});
