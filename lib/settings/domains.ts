import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { defineResource } from '../resources/index.js';
import { defineModel } from '../storage/index.js';
import { ADMIN_ONLY, domainName } from './shared.js';

export const domainFields = {
  name: domainName,
  enabled: z.boolean().default(true),
  verified: z.boolean().default(false),
  /** Other domains whose mail goes to the same local parts (Spec: alias through domain aliases). */
  aliases: z.array(domainName).max(100).default([]),
  dkimSelector: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/)
    .default('mail'),
  /** Set by `svcmail setup` from the generated key; shown on the DNS checklist. */
  dkimPublicKey: z.string().nullable().optional(),
};

export const DomainModel = defineModel({
  name: 'domain',
  table: 'domains',
  fields: domainFields,
  indexes: [{ fields: ['name'], unique: true }],
});

export const domainsResource = defineResource({
  group: 'mail',
  name: 'domains',
  entity: 'domain',
  summary: 'Mail domains the deployment serves: enabled and verified flags, aliases, the DKIM public key',
  model: DomainModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  audit: true,
  serverFields: ['dkimPublicKey'],
  immutableFields: ['name'],
  hooks: {
    async beforeCreate(ctx, data) {
      const aliases = (data.aliases as string[]) ?? [];
      if (aliases.includes(data.name as string)) throw new ApiError('api-106', 'a domain cannot alias itself');
      const taken = await ctx.store.repo(DomainModel).count({ name: { $in: aliases } });
      if (taken) throw new ApiError('api-112', 'an alias names a domain that is served on its own');
      return data;
    },
  },
});
