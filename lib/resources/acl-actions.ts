// Reading and changing a record's own ACL (/api/acls). The caller needs the share right on the
// record, checked like any access to it — so for mailboxes and folders trusted roles never count.
// Every change is audited. The routes in acl-routes.ts call these.
import { isoDate } from '../http/index.js';
import { z } from 'zod';
import { AclEntryModel, RIGHTS, subjectSchema, type AclEntryRecord } from '../acl/index.js';
import { writeAudit } from '../audit/index.js';
import type { Ctx } from '../context/index.js';
import { ApiError, invalid, notFound } from '../errors/index.js';
import type { Row } from '../storage/index.js';
import { checkRecord } from './access.js';
import type { ResourceDecl } from './define.js';
import type { ResourceRegistry } from './registry.js';

const rights = z.array(z.enum(RIGHTS)).min(1).max(RIGHTS.length);
const version = z.number().int().positive();

/** POST /api/acls: one entry per subject and record. */
export const aclGrantBody = z.strictObject({ resource: z.string().min(1), resourceUid: z.string().min(1), subject: subjectSchema, rights });
/** PUT /api/acls/:id: the new rights and the stored version. */
export const aclUpdateBody = z.strictObject({ rights, version });
/** DELETE /api/acls/:id: the stored version, in the body (or in ?version=). */
export const aclDeleteBody = z.strictObject({ version: version.optional() });

/** An entry as the routes answer it (dates as ISO text on the wire). */
export const aclEntrySchema = z.object({
  uid: z.string(),
  version: z.number().int(),
  resource: z.string(),
  resourceUid: z.string(),
  subject: z.string(),
  rights,
  createdAt: isoDate,
  updatedAt: isoDate,
});

const view = (e: Row<AclEntryRecord>) => ({
  uid: e.uid,
  version: e.version,
  resource: e.resource,
  resourceUid: e.resourceUid,
  subject: e.subject,
  rights: e.rights,
  createdAt: e.createdAt,
  updatedAt: e.updatedAt,
});

/** The ACL actions over the records of `registry`. */
export function aclActions(registry: ResourceRegistry) {
  const repo = (ctx: Ctx) => ctx.store.repo<AclEntryRecord>(AclEntryModel);

  /** The record an entry is on, with the caller's share right on it checked (404 when invisible). */
  async function target(ctx: Ctx, resource: string, uid: string): Promise<{ decl: ResourceDecl; rec: Row<Record<string, unknown>> }> {
    let decl: ResourceDecl;
    try {
      decl = registry.get(resource);
    } catch {
      throw notFound(`No such resource ${resource}`);
    }
    const rec = await ctx.store.repo<Record<string, unknown>>(decl.model).get(uid);
    if (!rec) throw notFound();
    await checkRecord(ctx, decl, rec, 'share');
    return { decl, rec };
  }

  async function loadEntry(ctx: Ctx, uid: string): Promise<Row<AclEntryRecord>> {
    const e = await repo(ctx).get(uid);
    if (!e) throw notFound();
    await target(ctx, e.resource, e.resourceUid);
    return e;
  }

  /** A mailbox keeps at least one owner: its last owner entry can neither lose the right nor go. */
  async function lastOwnerGuard(ctx: Ctx, entry: Row<AclEntryRecord>, nextRights: readonly string[] | null): Promise<void> {
    if (!entry.rights.includes('owner') || nextRights?.includes('owner')) return;
    const owners = (await repo(ctx).list({ filter: { resourceUid: entry.resourceUid }, limit: 1000 })).filter((e) =>
      e.rights.includes('owner'),
    );
    if (owners.length <= 1 && entry.resource === 'mailboxes') throw new ApiError('api-120', 'a mailbox keeps at least one owner');
  }

  return {
    async list(ctx: Ctx, resource: string, uid: string) {
      await target(ctx, resource, uid);
      return (await repo(ctx).list({ filter: { resourceUid: uid }, limit: 1000 })).map(view);
    },

    async grant(ctx: Ctx, body: z.output<typeof aclGrantBody>) {
      const { decl, rec } = await target(ctx, body.resource, body.resourceUid);
      const mailboxUid = decl.mailboxField ? (rec[decl.mailboxField] as string) : null;
      const created = await repo(ctx).create({ ...body, mailboxUid });
      await writeAudit(ctx.store, ctx, {
        action: 'acls.create',
        resource: body.resource,
        resourceUid: body.resourceUid,
        after: view(created),
      });
      return view(created);
    },

    async update(ctx: Ctx, uid: string, body: z.output<typeof aclUpdateBody>) {
      const e = await loadEntry(ctx, uid);
      await lastOwnerGuard(ctx, e, body.rights);
      const updated = await repo(ctx).update(e.uid, { rights: body.rights }, { expectedVersion: body.version });
      await writeAudit(ctx.store, ctx, {
        action: 'acls.update',
        resource: e.resource,
        resourceUid: e.resourceUid,
        before: view(e),
        after: view(updated),
      });
      return view(updated);
    },

    async remove(ctx: Ctx, uid: string, expectedVersion: number | undefined) {
      if (expectedVersion === undefined)
        throw invalid('version is required to delete (in the body or ?version=)', [{ path: 'version', message: 'required' }]);
      const e = await loadEntry(ctx, uid);
      await lastOwnerGuard(ctx, e, null);
      await repo(ctx).delete(e.uid, { expectedVersion });
      await writeAudit(ctx.store, ctx, { action: 'acls.delete', resource: e.resource, resourceUid: e.resourceUid, before: view(e) });
    },
  };
}
