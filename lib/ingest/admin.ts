import { ADMIN_ONLY } from '../settings/index.js';
import { ApiError } from '../errors/index.js';
import { AddressModel, freeRaw } from '../mail/index.js';
import { defineResource } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { DistributionListModel, IngestEntryModel, QuarantineModel, TransportRuleModel } from './models.js';
import { servedDomains } from './resolve.js';

/** A deleted entry or held copy frees its raw message unless something else still needs it. */
async function freeRawOfDeleted(ctx: Ctx, action: string, before: Record<string, unknown> | null): Promise<void> {
  if (action === 'delete' && before) await freeRaw(ctx, [before.rawRef as string]);
}

// Spec: administration resources. Each needs a trusted role with fresh elevation (sensitive ops).
const ALL = ['list', 'head', 'get', 'create', 'update', 'updateProperty', 'bulkUpdate', 'delete', 'bulkDelete'] as const;

export const ingestQueueResource = defineResource({
  group: 'mail',
  name: 'ingest-queue',
  entity: 'ingestEntry',
  summary:
    'Inbound messages per recipient mailbox and their state (queued, delivered, junk, quarantined, consumed, discarded, failed); POST /:id/retry queues a failed entry again',
  model: IngestEntryModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  audit: true,
  operations: ['list', 'head', 'get', 'delete'],
  sensitive: ['list', 'head', 'get', 'delete'],
  hooks: { afterCommit: freeRawOfDeleted },
});

export const quarantineResource = defineResource({
  group: 'mail',
  name: 'quarantine',
  entity: 'quarantineItem',
  summary:
    'Messages held for an administrator (virus, failed virus scan, transport rule, over quota); GET /:id/headers shows the header block, POST /:id/release files the message in the Inbox',
  model: QuarantineModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  audit: true,
  hiddenFields: ['headers', 'rawRef'],
  operations: ['list', 'head', 'get', 'delete', 'bulkDelete'],
  sensitive: ['list', 'head', 'get', 'delete', 'bulkDelete'],
  hooks: { afterCommit: freeRawOfDeleted },
});

export const transportRulesResource = defineResource({
  group: 'mail',
  name: 'transport-rules',
  entity: 'transportRule',
  summary:
    'Rules run once per inbound message before recipient resolution: reject (notice to DKIM-verified senders only), add a header, add a recipient, quarantine',
  model: TransportRuleModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  audit: true,
  sensitive: ALL,
  hooks: {
    beforeCreate: (_ctx, data) => checkRule(data),
    beforeUpdate: (_ctx, rec, patch) => {
      checkRule({ ...rec, ...patch });
      return patch;
    },
  },
});

function checkRule(data: Record<string, unknown>): Record<string, unknown> {
  if (data.action === 'addHeader' && !data.headerName)
    throw new ApiError('api-106', 'addHeader needs headerName', { details: [{ path: 'headerName', message: 'required for addHeader' }] });
  if (data.action === 'addRecipient' && !data.recipient)
    throw new ApiError('api-106', 'addRecipient needs recipient', {
      details: [{ path: 'recipient', message: 'required for addRecipient' }],
    });
  const header = (data.match as { header?: { pattern: string } } | undefined)?.header;
  if (header) {
    try {
      new RegExp(header.pattern, 'i');
    } catch {
      throw new ApiError('api-106', 'match.header.pattern is not a valid regular expression', {
        details: [{ path: 'match.header.pattern', message: 'invalid regular expression' }],
      });
    }
  }
  return data;
}

async function checkListAddress(ctx: Ctx, address: string): Promise<void> {
  const domain = address.slice(address.lastIndexOf('@') + 1);
  if (!(await servedDomains(ctx)).has(domain))
    throw new ApiError('api-106', `${address}: the domain ${domain} is not served here (enabled and verified)`, {
      details: [{ path: 'address', message: 'domain not served' }],
    });
  if (await ctx.store.repo(AddressModel).findOne({ address })) throw new ApiError('api-112', `the address ${address} belongs to a mailbox`);
}

export const distributionListsResource = defineResource({
  group: 'mail',
  name: 'distribution-lists',
  entity: 'distributionList',
  summary:
    'Distribution lists: members (mailboxes, other lists, external addresses relayed at once), members-only posting, external members; nested lists expand up to mail:distribution_lists:max_depth',
  model: DistributionListModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  audit: true,
  immutableFields: ['address'],
  hooks: {
    async beforeCreate(ctx, data) {
      await checkListAddress(ctx, data.address as string);
      return data;
    },
  },
});

export const INGEST_RESOURCES = [ingestQueueResource, quarantineResource, transportRulesResource, distributionListsResource];
