import { AclEntryModel } from './acl/index.js';
import { ADMIN_MODELS, auditLogResource } from './admin/index.js';
import { domainsResource } from './settings/index.js';
import { AuditEntryModel } from './audit/index.js';
import { AddressModel, foldersResource, mailboxItemResources, mailboxesResource, messagesResource, ThreadModel } from './mail/index.js';
import { BlobChunkModel, BlobModel } from './storage/index.js';
import { INGEST_MODELS, INGEST_RESOURCES } from './ingest/index.js';
import { KEY_MODELS } from './keys/index.js';
import { SEND_MODELS } from './send/index.js';
import { pimResources } from './pim/index.js';
import { ESCROW_MODELS, ESCROW_RESOURCES } from './escrow/index.js';
import { ResourceRegistry } from './resources/index.js';
import { PLUGIN_MODELS } from './plugins/index.js';
import { JOB_MODELS } from './jobs/index.js';
import { LIFECYCLE_MODELS, LIFECYCLE_RESOURCES } from './lifecycle/index.js';
import type { ModelDef } from './storage/index.js';

/** Every resource of the product; a feature adds its declarations here. */
export function productRegistry(): ResourceRegistry {
  return new ResourceRegistry().add(
    mailboxesResource,
    foldersResource,
    messagesResource,
    ...mailboxItemResources,
    domainsResource,
    auditLogResource,
    ...INGEST_RESOURCES,
    ...pimResources,
    ...ESCROW_RESOURCES,
    ...LIFECYCLE_RESOURCES,
  );
}

/** Every model the store must know: the resources' plus the internal ones. */
export function productModels(registry: ResourceRegistry): ModelDef[] {
  const models = [...registry.models(), AclEntryModel, AddressModel, ThreadModel, BlobModel, BlobChunkModel];
  if (!models.includes(AuditEntryModel)) models.push(AuditEntryModel);
  for (const m of [...INGEST_MODELS, ...ESCROW_MODELS]) if (!models.includes(m)) models.push(m);
  for (const m of KEY_MODELS) if (!models.includes(m)) models.push(m);
  for (const m of SEND_MODELS) if (!models.includes(m)) models.push(m);
  for (const m of [...ADMIN_MODELS, ...JOB_MODELS]) if (!models.includes(m)) models.push(m);
  for (const m of PLUGIN_MODELS) if (!models.includes(m)) models.push(m);
  for (const m of LIFECYCLE_MODELS) if (!models.includes(m)) models.push(m);
  return models;
}
