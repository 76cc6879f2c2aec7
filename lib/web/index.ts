// The pages (/, /settings, /admin, /escrow): HTML shells with the branding and one ES module each.
export { pagesRouter, renderPage, PAGES, WEB_ASSETS } from './pages.js';
