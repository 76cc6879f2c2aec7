// Authorization matrix, generic resource routes: every list, count, read, create, update, property
// update, bulk update, delete and bulk delete of every declared resource (read from the api app's
// OpenAPI registry, ?scope=admin and unfiltered-list variants included) × {no token, bad signature,
// wrong audience, wrong issuer, expired, owner, other user, read-only sharer, admin not elevated,
// admin elevated, stale elevation}. Verdicts come from the declarations (test/security/matrix).
import { matrixSuite } from './matrix/suite.js';

matrixSuite('resource routes', (_op, t) => t.generic, { operations: 200 });
