// npm run bench -- web: the web mail page in Chromium (headless, Debian's) against the api app as
// the package ships it, on SQLite, with an Inbox of 100 000 messages (BENCH_WEB_MESSAGES):
// - time from navigation to the first ten rows on screen, each run in a new browser context (cold:
//   no cache), median of BENCH_RUNS (5), with the page's own marks (shell answered, DOM ready, rows);
//   beside it two floors measured in the same runs — a cold navigation to a page that runs nothing,
//   and the API's own answer for the list's first page fetched from the browser;
// - JavaScript transferred on that first load (compressed as served) and its size uncompressed;
// - the page's JS heap (after a garbage collection) and DOM size once 5 000 rows were scrolled through.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { signToken } from '../lib/auth/index.js';
import { productModels, productRegistry } from '../lib/catalog.js';
import { loadConfig } from '../lib/config/index.js';
import { LocalEventBus } from '../lib/events/index.js';
import { createLogger } from '../lib/log/index.js';
import { openSqlStore } from '../lib/storage/sql/open.js';
import { launchChromium } from '../test/helpers/browser.js';
import { stageBuild } from './_build.js';
import { corpus, fillInbox, seedMailbox } from './_eas-seed.js';
import { startBenchServer, stopChild } from './_process.js';
import { median, round } from './_stats.js';

const SECRET = 'bench-secret-0123456789abcdef';
const MESSAGES = Number(process.env.BENCH_WEB_MESSAGES ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const SCROLL_ROWS = 5000;

interface Seeded {
  dbUrl: string;
  mailboxUid: string;
}

/** The reader's mailbox with MESSAGES corpus messages in its Inbox, filed by lib/mail as delivery files them. */
async function seed(dir: string): Promise<Seeded> {
  const dbUrl = `sqlite:${join(dir, 'bench.sqlite')}`;
  const config = loadConfig({ env: { NODE_ENV: 'production' }, values: { data_dir: dir, 'auth:secret': SECRET, 'log:level': 'silent' } });
  const store = await openSqlStore({ url: dbUrl, models: productModels(productRegistry()), synchronize: true });
  try {
    const box = await seedMailbox(store, 'reader');
    process.stderr.write(`bench: filing ${MESSAGES} messages into the Inbox…\n`);
    await fillInbox({ config, store, events: new LocalEventBus(), log: createLogger({ level: 'silent' }) }, box.uid, corpus(), MESSAGES);
    return { dbUrl, mailboxUid: box.uid };
  } finally {
    await store.close();
  }
}

/** A new, empty browser context signed in as the reader (the session cookie the sign-in service would set). */
async function readerContext(browser: Browser, base: string): Promise<BrowserContext> {
  const config = loadConfig({
    env: { NODE_ENV: 'production' },
    values: { 'auth:secret': SECRET, 'auth:options:audience': 'bench', 'auth:options:issuer': 'bench' },
  });
  const token = await signToken(config, { uid: 'reader', ttlSeconds: 3600 });
  // bypassCSP: the measuring snippets below are strings the pages' CSP (no eval) would refuse.
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
  context.setDefaultTimeout(60_000);
  await context.addCookies([{ name: 'jwt', value: token, domain: new URL(base).hostname, path: '/', httpOnly: true, sameSite: 'Strict' }]);
  return context;
}

const ROWS = '[aria-label="Messages"] [data-message]';

// What runs in the page (strings: this file is type-checked for Node, without the DOM's types).
const JS_TRANSFERRED = `performance.getEntriesByType('resource')
  .filter((e) => e.initiatorType === 'script' || e.name.endsWith('.js'))
  .reduce((a, e) => ({ wire: a.wire + e.transferSize, decoded: a.decoded + e.decodedBodySize }), { wire: 0, decoded: 0 })`;
const API_FLOOR = (box: string) => `(async () => {
  const folders = await (await fetch('/api/mail/folders?mailboxUid=${box}')).json();
  const inbox = folders.find((f) => f.role === 'inbox').uid;
  const t = performance.now();
  await (await fetch('/api/mail/threads?folderUid=' + inbox + '&limit=100&page=0')).json();
  return performance.now() - t;
})()`;
const SCROLL = (rows: number) => `(async () => {
  const list = document.querySelector('[aria-label="Messages"]');
  const rowHeight = document.querySelector('${ROWS}').offsetHeight || 64;
  for (let top = 0; top < ${rows} * rowHeight; top += list.clientHeight) {
    list.scrollTop = top;
    await new Promise((r) => requestAnimationFrame(r));
    for (let i = 0; i < 200 && document.querySelector('.row.loading'); i++) await new Promise((r) => setTimeout(r, 10));
  }
})()`;
const MARKS = `(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return { html: nav.responseEnd, dom_ready: nav.domContentLoadedEventEnd, rows: performance.now() };
})()`;
const AFTER = `({ dom: document.getElementsByTagName('*').length,
  shown: Number(document.querySelector('${ROWS}')?.getAttribute('aria-posinset') ?? 0) })`;

/** One cold load: ms from navigation start to ten rows on screen, and the JavaScript that came (bytes on the wire, bytes decoded). */
async function coldLoad(context: BrowserContext, base: string) {
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`${base}/`);
  await page.waitForFunction(`document.querySelectorAll('${ROWS}').length >= 10`, undefined, { polling: 'raf' });
  const ms = Date.now() - t0;
  const js = (await page.evaluate(JS_TRANSFERRED)) as { wire: number; decoded: number };
  // the page's own clock: the shell's answer, the module run, the rows (ms from navigation start)
  const marks = (await page.evaluate(MARKS)) as { html: number; dom_ready: number; rows: number };
  return { ms, js, marks, page };
}

/** A cold navigation to a page that runs nothing (a small JSON document): what a new tab costs before any app. */
async function blankPage(context: BrowserContext, base: string): Promise<number> {
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`${base}/.well-known/svc/server-info`);
  const ms = Date.now() - t0;
  await page.close();
  return ms;
}

/** The API's answer for the list's first page, timed from the browser (the floor under the page's time). */
async function apiFloor(context: BrowserContext, base: string, mailboxUid: string): Promise<number> {
  const page = await context.newPage();
  await page.goto(`${base}/.well-known/svc/server-info`);
  const ms = (await page.evaluate(API_FLOOR(mailboxUid))) as number;
  await page.close();
  return ms;
}

/** Scrolls the list through SCROLL_ROWS rows, waiting for each stretch to be read; then the heap after a GC and the DOM size. */
async function afterScrolling(context: BrowserContext, page: Awaited<ReturnType<typeof coldLoad>>['page']) {
  await page.evaluate(SCROLL(SCROLL_ROWS));
  const cdp = await context.newCDPSession(page);
  await cdp.send('HeapProfiler.collectGarbage');
  const heap = (await cdp.send('Runtime.getHeapUsage')) as { usedSize: number };
  const { dom, shown } = (await page.evaluate(AFTER)) as { dom: number; shown: number };
  return { heapMiB: heap.usedSize / 2 ** 20, dom, shown };
}

export default async function web(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-bench-web-'));
  const stage = stageBuild(['_list-server']);
  let server: ChildProcess | null = null;
  const browser = await launchChromium(); // the tests' launch: no background networking, nothing leaves the machine
  try {
    const seeded = await seed(dir);
    const started = await startBenchServer(stage, '_list-server', ['db', seeded.dbUrl], { BENCH_SECRET: SECRET, NODE_ENV: 'production' });
    server = started.child;
    const loads: Array<{ ms: number; wire: number; decoded: number; marks: Record<string, number> }> = [];
    const floors: number[] = [];
    const blanks: number[] = [];
    let memory: Awaited<ReturnType<typeof afterScrolling>> | null = null;
    for (let i = 0; i <= RUNS; i++) {
      const blank = await readerContext(browser, started.url);
      if (i > 0) blanks.push(await blankPage(blank, started.url));
      await blank.close();
      const context = await readerContext(browser, started.url);
      const { ms, js, marks, page } = await coldLoad(context, started.url);
      if (i > 0) loads.push({ ms, ...js, marks }); // run 0 warms the server (its first queries compile)
      if (i > 0) floors.push(await apiFloor(context, started.url, seeded.mailboxUid));
      if (i === RUNS) memory = await afterScrolling(context, page);
      await context.close();
    }
    const firstRows = median(loads.map((l) => l.ms));
    return {
      code: stage.code,
      messages: MESSAGES,
      runs: RUNS,
      first_ten_rows_ms: round(firstRows, 0),
      goal_under_1000_ms_met: firstRows < 1000,
      in_page_ms: Object.fromEntries(['html', 'dom_ready', 'rows'].map((k) => [k, round(median(loads.map((l) => l.marks[k])), 0)])),
      blank_page_ms: round(median(blanks), 0),
      page_to_blank_ratio: round(firstRows / median(blanks), 1),
      api_first_page_ms: round(median(floors), 1),
      page_to_api_ratio: round(firstRows / median(floors), 1),
      js_transferred_kb: round(median(loads.map((l) => l.wire)) / 1024, 1),
      js_decoded_kb: round(median(loads.map((l) => l.decoded)) / 1024, 1),
      after_scrolling: memory && {
        rows: SCROLL_ROWS,
        reached_row: memory.shown,
        js_heap_mib: round(memory.heapMiB, 1),
        dom_elements: memory.dom,
      },
    };
  } finally {
    await browser.close();
    if (server) await stopChild(server);
    stage.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
