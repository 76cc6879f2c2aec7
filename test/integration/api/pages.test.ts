// The pages /, /settings, /admin and /escrow over real HTTP: each is an HTML shell with the
// branding applied (name, logo, colours), a strict Content-Security-Policy whose nonce is the
// branding style's, and its entry of the web app's build; every file of the build a page or a
// module names is served, cached for a year; a branding change shows on the next page load;
// branding text is escaped; an expired session still gets the page (pages-browser.test.ts follows
// the browser to the sign-in service); unknown and traversing asset paths are 404; without a build
// the pages say how to make one.
import express from 'express';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenApiRegistry } from '../../../lib/http/index.js';
import { PAGES, pagesRouter, WEB_BUILD } from '../../../lib/web/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';

const PNG_1PX = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const [sqlite] = await sqlBackends(); // the pages read one branding record: the store adapter is not what is under test

describe('pages and assets', () => {
  let api: TestApi;
  let admin: string;
  const page = async (path: string, headers: Record<string, string> = {}) => {
    const r = await fetch(`${api.url}${path}`, { headers });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };

  beforeAll(async () => {
    api = await startTestApi(sqlite, { 'mail:auth_server_url': 'https://signin.example.test/' });
    admin = await api.token({ uid: 'root', roles: ['admin'], elevated: new Date() });
  }, 60_000);
  afterAll(async () => api?.close());

  it.each(Object.entries(PAGES))('%s is an HTML shell with the default branding, a nonce-bound CSP and its module', async (path, p) => {
    const r = await page(path);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.text).toContain(`<title>${p.title} · svcmail</title>`);
    expect(r.text).toContain('<span class="brand-name">svcmail</span>');
    expect(r.text).toContain('--brand-primary:#1f6feb');
    expect(r.text).toMatch(new RegExp(`<script type="module" src="/assets/${p.app}-[\\w-]+\\.js"></script>`));
    expect(r.text).toContain(`aria-current="page">${p.title}</a>`);
    expect(r.text).toContain('data-auth-url="https://signin.example.test"');
    const csp = r.headers.get('content-security-policy')!;
    const nonce = /<style nonce="([^"]+)">/.exec(r.text)![1];
    expect(csp).toContain(`style-src 'self' 'nonce-${nonce}'`);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("form-action 'self' https://signin.example.test");
    expect(csp).toContain("frame-ancestors 'none'");
    expect((await page(path)).text).not.toContain(nonce); // a fresh nonce per answer
  });

  it('serves every file of the build the pages and their modules name, with its type and a year of cache life', async () => {
    const named = new Set<string>();
    for (const path of Object.keys(PAGES))
      for (const m of (await page(path)).text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) named.add(m[1]);
    for (const file of readdirSync(WEB_BUILD).filter((f) => f.endsWith('.js'))) {
      // static imports, dynamic ones (a view loaded on first use: import(`./x.js`)) and the files such a load preloads
      const code = readFileSync(join(WEB_BUILD, file), 'utf8');
      for (const m of code.matchAll(/(?:from|import\()\s*["`]\.\/([\w.-]+)["`]/g)) named.add(`/assets/${m[1]}`);
      // a Web Worker's script: new Worker(new URL(`/assets/x.js`, import.meta.url))
      for (const m of code.matchAll(/new URL\(\s*["`]\/assets\/([\w.-]+)["`]/g)) named.add(`/assets/${m[1]}`);
      for (const deps of code.matchAll(/m\.f=\[([^\]]*)\]/g))
        for (const m of deps[1].matchAll(/"([\w.-]+)"/g)) named.add(`/assets/${m[1]}`);
    }
    // Every file the build made is reached from a page, and nothing else is named.
    expect([...named].sort()).toEqual(
      readdirSync(WEB_BUILD)
        .filter((f) => !f.startsWith('.') && !/\.(br|gz)$/.test(f))
        .map((f) => `/assets/${f}`)
        .sort(),
    );
    for (const app of Object.values(PAGES).map((p) => p.app))
      expect(
        [...named].some((a) => a.startsWith(`/assets/${app}-`)),
        app,
      ).toBe(true);
    for (const a of named) {
      const r = await page(a);
      expect(r.status, a).toBe(200);
      expect(r.headers.get('content-type'), a).toMatch(a.endsWith('.css') ? /^text\/css/ : /^(text|application)\/javascript/);
      expect(r.headers.get('cache-control'), a).toBe('public, max-age=31536000, immutable');
      expect(r.text).toBe(readFileSync(join(WEB_BUILD, a.slice('/assets/'.length)), 'utf8'));
      // A script run as a Web Worker has the policy of its own answer: WebAssembly (Argon2id), nothing else.
      if (a.endsWith('.js'))
        expect(r.headers.get('content-security-policy'), a).toBe("default-src 'none'; script-src 'self' 'wasm-unsafe-eval'");
    }
    for (const bad of [
      '/assets/nope.js',
      '/assets/../package.json',
      '/assets/%2e%2e/package.json',
      '/assets/..%2f..%2fpackage.json',
      '/assets/',
      '/assets/.hidden',
      '/assets/.vite/manifest.json',
    ]) {
      const r = await page(bad);
      expect(r.status, bad).toBe(404);
      expect(JSON.parse(r.text), bad).toMatchObject({ code: 'api-107', status: 404 });
    }
  });

  it('serves the build compressed as it was built: brotli or gzip as the client accepts, plain otherwise, Vary: Accept-Encoding', async () => {
    const script = readdirSync(WEB_BUILD).find((f) => /^mail-.*\.js$/.test(f))!;
    const plain = readFileSync(join(WEB_BUILD, script));
    const raw = (accept: string | null) =>
      new Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
        const req = httpGet(`${api.url}/assets/${script}`, { headers: accept === null ? {} : { 'accept-encoding': accept } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        });
        req.on('error', reject);
      });
    const br = await raw('gzip, deflate, br');
    expect(br.headers).toMatchObject({
      'content-encoding': 'br',
      'content-type': 'text/javascript; charset=utf-8',
      vary: 'Accept-Encoding',
    });
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(brotliDecompressSync(br.body).equals(plain)).toBe(true);
    expect(br.body.length).toBeLessThan(plain.length / 2);
    const gz = await raw('br;q=0, gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(plain)).toBe(true);
    for (const accept of [null, 'identity', 'gzip;q=0, br;q=0']) {
      const r = await raw(accept);
      expect(r.headers['content-encoding'], String(accept)).toBeUndefined();
      expect(r.body.equals(plain), String(accept)).toBe(true);
    }
    // the compressed copies are not files of their own to ask for by another name
    expect((await raw('br')).headers['content-type']).toMatch(/^text\/javascript/);
  });

  it('a branding change shows on the next page load: name, logo and colours; text is escaped', async () => {
    const put = await api.call('PUT', '/api/system/branding', {
      token: admin,
      body: { name: `Tom & "Jerry's" Mail`, logo: PNG_1PX, primaryColor: '#0A7', accentColor: '#123456' },
    });
    expect(put.status).toBe(200);
    for (const path of Object.keys(PAGES)) {
      const r = await page(path);
      expect(r.text).toContain('<span class="brand-name">Tom &amp; &quot;Jerry&#39;s&quot; Mail</span>');
      expect(r.text).toMatch(/<title>[^<]+ · Tom &amp; &quot;Jerry&#39;s&quot; Mail<\/title>/);
      expect(r.text).toContain(`<img class="brand-logo" src="${PNG_1PX}" alt="">`);
      expect(r.text).toContain('--brand-primary:#0a7;--brand-accent:#123456');
    }
    const url = 'https://cdn.example.test/logo.png?a=1&b="x"';
    expect((await api.call('PUT', '/api/system/branding', { token: admin, body: { logo: url } })).body.code).toBe('api-106'); // quotes are refused when stored
    expect(
      (await api.call('PUT', '/api/system/branding', { token: admin, body: { logo: 'https://cdn.example.test/logo.png?a=1&b=2' } })).status,
    ).toBe(200);
    expect((await page('/')).text).toContain('<img class="brand-logo" src="https://cdn.example.test/logo.png?a=1&amp;b=2" alt="">');
  });

  it('the shell answers an expired or forged session too (the module then sends the user to sign in); the API does not', async () => {
    const expired = await api.token({ uid: 'alice', roles: [], ttlSeconds: -60 });
    for (const [cookie, status, code] of [
      [`jwt=${expired}`, 401, 'api-100'],
      ['jwt=forged.token.value', 403, 'api-101'],
    ] as const) {
      const r = await page('/', { cookie });
      expect(r.status).toBe(200);
      expect(r.text).toContain('<main id="app"');
      const a = await page('/api/mail/mailboxes', { cookie });
      expect([a.status, JSON.parse(a.text).code]).toEqual([status, code]);
    }
    // What the browser then does with those answers: pages-browser.test.ts.
  });

  it('the pages are in the OpenAPI document as public HTML operations', async () => {
    const doc = (await api.call('GET', '/api/openapi/json', { token: admin })).body;
    for (const [path, p] of Object.entries(PAGES)) expect(doc.paths[path]?.get, path).toMatchObject({ operationId: `page_${p.app}` });
  });

  it('without a build, every page answers 503 saying how to build the web app', async () => {
    const app = express().use(
      pagesRouter(api.deps, new OpenApiRegistry(), (_req, _res, next) => next(), mkdtempSync(join(tmpdir(), 'no-build-'))),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((ok) => server.once('listening', ok));
    try {
      for (const path of Object.keys(PAGES)) {
        const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
        expect(r.status, path).toBe(503);
        expect(await r.text()).toContain('npm run build:web');
      }
    } finally {
      server.close();
    }
  });
});
