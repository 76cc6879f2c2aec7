// Who owns a mailbox, changed by administration (the admin console's mailbox form): owners are the
// mailbox record's ACL entries with the `owner` right. /api/acls cannot do it for an administrator —
// it needs the share right on the record, and trusted roles count for nothing on mailbox-scoped
// data — so this route, for a trusted role with fresh elevation, sets the owner list as a whole in
// one transaction (other rights an entry carries stay), keeps at least one owner, and is audited.
// It reads and changes no mail.
import express, { type Router } from 'express';
import { z } from 'zod';
import { AclEntryModel, ownersOf, type AclEntryRecord } from '../acl/index.js';
import { writeAudit } from '../audit/index.js';
import type { Ctx, Deps } from '../context/index.js';
import { notFound } from '../errors/index.js';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Row } from '../storage/index.js';
import { MailboxModel } from './mailboxes.js';

const ownersBody = z.strictObject({
  owners: z
    .array(
      z
        .string()
        .trim()
        .min(1)
        .max(200)
        .regex(/^[^\s:]+$/, 'a sign-in user name, without spaces or colons'),
    )
    .min(1, 'a mailbox keeps at least one owner')
    .max(100),
});

/** Sets the mailbox's owners to `owners`: entries gain or lose the owner right, new ones are made, emptied ones go. */
export async function setOwners(ctx: Ctx, mailboxUid: string, owners: string[]): Promise<{ uid: string; owners: string[] }> {
  if (!(await ctx.store.repo(MailboxModel).get(mailboxUid))) throw notFound();
  const wanted = new Set(owners);
  return ctx.store.transaction(async (tx) => {
    const acl = tx.repo<AclEntryRecord>(AclEntryModel);
    const before = await ownersOf(tx, mailboxUid);
    const entries: Array<Row<AclEntryRecord>> = await acl.list({ filter: { resourceUid: mailboxUid }, limit: 1000 });
    for (const e of entries) {
      const uid = e.subject.startsWith('user:') ? e.subject.slice(5) : null;
      const owner = e.rights.includes('owner');
      if (owner && (uid === null || !wanted.has(uid))) {
        const rest = e.rights.filter((r) => r !== 'owner');
        if (rest.length) await acl.update(e.uid, { rights: rest });
        else await acl.delete(e.uid);
      } else if (!owner && uid !== null && wanted.has(uid)) await acl.update(e.uid, { rights: [...e.rights, 'owner'] });
    }
    for (const uid of wanted)
      if (!entries.some((e) => e.subject === `user:${uid}`))
        await acl.create({ resource: 'mailboxes', resourceUid: mailboxUid, subject: `user:${uid}`, rights: ['owner'], mailboxUid });
    const after = await ownersOf(tx, mailboxUid);
    await writeAudit(tx, ctx, {
      action: 'mailboxes.owners',
      resource: 'mailboxes',
      resourceUid: mailboxUid,
      before: { owners: before },
      after: { owners: after },
    });
    return { uid: mailboxUid, owners: after };
  });
}

/** PUT /api/mail/mailboxes/:id/owners (mounted before the generic routes: "owners" is not a property). */
export function mailboxOwnersRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  defineRoute(router, deps, openapi, {
    method: 'put',
    path: '/api/mail/mailboxes/:id/owners',
    operationId: 'mailbox_owners_put',
    summary: "Set a mailbox's owners (sign-in user names; at least one): trusted role with fresh elevation, audited as mailboxes.owners",
    description:
      "The owners' ACL entries on the mailbox gain or lose the owner right (other rights they carry stay). Nothing of the mailbox's mail is read or changed; GET /api/mail/mailboxes?scope=admin shows the owners.",
    tags: ['mail/mailboxes'],
    auth: 'trusted-fresh',
    body: ownersBody,
    response: z.object({ uid: z.string(), owners: z.array(z.string()) }),
    errors: { 404: 'api-107: no such mailbox' },
    handler: (ctx, { params, body }) => setOwners(ctx, params.id, body.owners),
  });
  return router;
}
