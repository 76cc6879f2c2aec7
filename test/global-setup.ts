// Before any test file: the web app's build (web/build) is current, since the pages and browser
// tests serve it. `npm test` has just built it and this finds nothing to do; a single file run after
// a change to web/src builds it here (a few seconds) instead of testing an old build.
//
// Then the daemons and the CLI are compiled once (test/compiled-tree.ts), and SVCMAIL_DIST points
// every process the tests start through bin/*.js at that build (bin/load.js): each start then skips
// tsx's transpiling. The test files themselves still import the sources. A test that needs a process
// run from the sources (development auto-login) sets SVCMAIL_DIST empty in that process's environment.
import { buildWeb } from '../web/build.js';
import { compiledTree } from './compiled-tree.js';

export default async function setup(): Promise<void> {
  await buildWeb({ ifStale: true, quiet: true });
  // `SVCMAIL_DIST= npx vitest run …` (set and empty) runs every process from the sources.
  if (process.env.SVCMAIL_DIST === '') return;
  try {
    process.env.SVCMAIL_DIST = compiledTree();
  } catch (e) {
    // Sources that do not compile: the processes run them through tsx, as without this build.
    process.stderr.write(`test set-up: processes run from the sources, no compiled build: ${(e as Error).message}\n`);
  }
}
