import escapeHtml from 'escape-html';
import { randomBytes } from 'node:crypto';
import express, { type RequestHandler, type Router } from 'express';
import { readBranding, type Branding } from '../settings/index.js';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { pageAssets, readManifest, WEB_BUILD, type Manifest, type PageAssets } from './assets.js';
import { precompressed } from './precompressed.js';

/**
 * Spec: "The pages /, /settings, /admin and /escrow and static assets are served without the /api
 * prefix." Each page is a shell rendered here with the branding (name in the title and header, the
 * logo, the colours as CSS custom properties) and its entry of the web app's build (web/, Vite:
 * lib/web/assets.ts) that talks to the API with the session cookie. The shells hold no user data,
 * so they are public and never cached; the API decides what each caller sees. The build's files
 * are named by their content and cached for a year.
 */
export const PAGES = {
  '/': { app: 'mail', title: 'Mail' },
  '/settings': { app: 'settings', title: 'Settings' },
  '/admin': { app: 'admin', title: 'Administration' },
  '/escrow': { app: 'escrow', title: 'Key escrow' },
} as const;

/** The page's HTML. Branding values are validated when stored and escaped again here. */
export function renderPage(
  page: (typeof PAGES)[keyof typeof PAGES],
  b: Branding,
  opts: { nonce: string; authUrl: string; assets: PageAssets },
): string {
  const name = escapeHtml(b.name);
  const colour = (c: string) => (/^#[0-9a-f]{3,6}$/i.test(c) ? c : 'inherit');
  const nav = Object.entries(PAGES)
    .map(([path, p]) => `<a href="${path}"${p === page ? ' aria-current="page"' : ''}>${p.title}</a>`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${page.title} · ${name}</title>
${opts.assets.styles.map((f) => `<link rel="stylesheet" href="/assets/${escapeHtml(f)}">`).join('\n')}
<style nonce="${opts.nonce}">:root{--brand-primary:${colour(b.primaryColor)};--brand-accent:${colour(b.accentColor)};--brand-bg:${colour(b.backgroundColor)};--brand-text:${colour(b.textColor)}}</style>
<script type="module" src="/assets/${escapeHtml(opts.assets.script)}"></script>
${opts.assets.preload.map((f) => `<link rel="modulepreload" href="/assets/${escapeHtml(f)}">`).join('\n')}
</head>
<body data-app="${page.app}" data-auth-url="${escapeHtml(opts.authUrl)}">
<header class="brand"><a class="brand-home" href="/">${b.logo ? `<img class="brand-logo" src="${escapeHtml(b.logo)}" alt="">` : ''}<span class="brand-name">${name}</span></a><nav>${nav}</nav>${opts.authUrl ? '<button type="button" id="sign-out" class="sign-out">Sign out</button>' : ''}</header>
<main id="app" aria-live="polite"><noscript>${name} needs JavaScript in the browser.</noscript></main>
</body>
</html>
`;
}

/** Content-Security-Policy of a script of the build when it runs as a Web Worker. */
const WORKER_POLICY = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'";

/** Content-Security-Policy of the pages, built once: own scripts and styles only, the branding style by the answer's nonce. */
function policyFor(authUrl: string): (nonce: string) => string {
  let signin = '';
  try {
    signin = authUrl ? ` ${new URL(authUrl).origin}` : '';
  } catch {
    signin = '';
  }
  const before = ["default-src 'self'", "script-src 'self'"].join('; ');
  const after = [
    "img-src 'self' data: https:",
    `connect-src 'self'${signin}`, // the sign-in service: session renewal and sign-out
    "object-src 'none'",
    "base-uri 'none'",
    `form-action 'self'${signin}`,
    "frame-ancestors 'none'",
  ].join('; ');
  return (nonce) => `${before}; style-src 'self' 'nonce-${nonce}'; ${after}`;
}

const NOT_BUILT =
  'The web app is not built. From a checkout run `npm run build:web` (npm start and npm test build it when a source changed); the Debian package ships it built.\n';

/** The build's manifest, read at the first page and again while there is none (a build made after start is found). */
function builtPages(dir: string): { assets(app: string): PageAssets | null } {
  let manifest: Manifest | null = null;
  return {
    assets(app) {
      manifest ??= readManifest(dir);
      return manifest && pageAssets(manifest, app);
    },
  };
}

/** The pages and /assets/*. Mounted before sign-in (the shells are public), behind the given limiter. */
export function pagesRouter(deps: Deps, openapi: OpenApiRegistry, limiter: RequestHandler, dir: string = WEB_BUILD): Router {
  const router = express.Router();
  const build = builtPages(dir);
  const authUrl = deps.config.get('mail:auth_server_url').replace(/\/+$/, '');
  const policy = policyFor(authUrl);
  for (const [path, page] of Object.entries(PAGES)) {
    defineRoute(router, deps, openapi, {
      method: 'get',
      path,
      operationId: `page_${page.app}`,
      summary: `The ${page.title.toLowerCase()} page (HTML; branding applied)`,
      description:
        'Public shell: the browser app in it signs in through the jwt cookie (sending the user to the sign-in service when it answers 401) and reads everything through the API.',
      tags: ['pages'],
      auth: 'none',
      before: [limiter],
      rawResponse: { description: 'text/html', contentType: 'text/html' },
      handler: async (ctx, _input, _req, res) => {
        const assets = build.assets(page.app);
        if (!assets) {
          res.status(503).type('text').send(NOT_BUILT);
          return;
        }
        const nonce = randomBytes(16).toString('base64');
        const html = renderPage(page, await readBranding(ctx), { nonce, authUrl, assets });
        res.set('Content-Security-Policy', policy(nonce)).type('html').send(html);
      },
    });
  }
  router.use(
    '/assets',
    limiter,
    precompressed(dir),
    express.static(dir, {
      index: false,
      dotfiles: 'deny',
      fallthrough: true,
      etag: true,
      lastModified: true,
      // Every file of the build is named by its content: a change is a new name. A script run as a
      // Web Worker gets the policy of its own answer: the Argon2id worker compiles WebAssembly
      // ('wasm-unsafe-eval', never eval) and loads nothing else. Pages ignore a script's policy.
      setHeaders: (res, file) => {
        res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
        if (/\.js(\.br|\.gz)?$/.test(file)) res.setHeader('Content-Security-Policy', WORKER_POLICY);
      },
    }),
  );
  return router;
}
