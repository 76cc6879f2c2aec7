export * from './define.js';
export { ResourceRegistry } from './registry.js';
export { ResourceService, BULK_MAX, type BulkResult } from './service.js';
export { resourceRouter } from './routes.js';
export { checkRecord, checkClass, checkSensitive, readableMailboxes, grantsFor, subjectsFor } from './access.js';
export { schemasOf } from './schemas.js';
export { parseListQuery, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, type QueryParams } from './query.js';
export { aclRouter } from './acl-routes.js';
