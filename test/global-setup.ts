// Before any test file: the web app's build (web/build) is current, since the pages and browser
// tests serve it. `npm test` has just built it and this finds nothing to do; a single file run after
// a change to web/src builds it here (a few seconds) instead of testing an old build.
import { buildWeb } from '../web/build.js';

export default async function setup(): Promise<void> {
  await buildWeb({ ifStale: true, quiet: true });
}
