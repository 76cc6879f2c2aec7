import { AuditEntryModel } from '../audit/index.js';
import { defineResource } from '../resources/index.js';
import { ADMIN_ONLY } from '../settings/index.js';

/**
 * Read-only: the audit log is append-only (entries are written by the services, never by clients).
 * Lists come newest first, as an administrator reads a log; ?sort=createdAt gives the oldest first.
 */
export const auditLogResource = defineResource({
  group: 'mail',
  name: 'audit-log',
  entity: 'auditEntry',
  summary:
    'Administrative changes and audited reads: who, what, when, from where, before and after; newest first unless sort says otherwise',
  model: AuditEntryModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  operations: ['list', 'head', 'get'],
  defaultSort: [{ field: 'createdAt', dir: 'desc' }],
});
