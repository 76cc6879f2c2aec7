// Authorization matrix, feature routes: every route of the api app's OpenAPI registry that is not a
// generic resource route (messages raw/body/attachments, send, search, compose, keys and key vault,
// escrow, lifecycle, impersonation, PIM export/import/occurrences/feed, ingest administration and the
// internal hand-off, metrics, dns-checklist, ACLs, policies, plugins, well-known) × every kind of
// caller. A route registered tomorrow is driven here without a change to this file.
import { matrixSuite } from './matrix/suite.js';

matrixSuite('feature routes', (_op, t) => !t.generic, { operations: 90 });
