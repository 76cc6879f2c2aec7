// The pages (/, /settings, /admin, /escrow): HTML shells with the branding and their entry of the web app's build.
export { pagesRouter, renderPage, PAGES } from './pages.js';
export { pageAssets, readManifest, WEB_BUILD, type Manifest, type PageAssets } from './assets.js';
