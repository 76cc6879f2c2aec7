import { z } from 'zod';
import { defineResource, type ResourceDecl } from '../resources/index.js';
import type { ModelDef } from '../storage/index.js';

/** Every personal-information resource is mailbox-scoped exactly like mail (same ACL and 404 rules). */
export function pimResource(
  decl: Pick<ResourceDecl, 'name' | 'entity' | 'summary' | 'model' | 'hooks' | 'serverFields' | 'hiddenFields' | 'view'> & {
    parent?: ResourceDecl['parent'];
  },
): ResourceDecl {
  return defineResource({
    group: 'mail',
    scope: 'mailbox',
    mailboxField: 'mailboxUid',
    defaultAcl: [],
    parent: decl.parent ?? { resource: 'mailboxes', field: 'mailboxUid' },
    ...decl,
  });
}

export const mailboxUid = z.string().min(1);
export const shortText = (max = 500) => z.string().trim().max(max);

/** Models of this folder, for the store. */
export type PimModels = ModelDef[];
