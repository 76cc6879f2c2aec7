import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { AclEntryModel, RIGHTS, subjectSchema, type AclEntryRecord } from '../acl/index.js';
import { ApiError, notFound, parseOrThrow } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import { jsonSchema, type OpenApiRegistry } from '../http/index.js';
import type { Row } from '../storage/index.js';
import { checkRecord } from './access.js';
import type { ResourceDecl } from './define.js';
import type { Ctx, Deps } from '../context/index.js';
import type { ResourceRegistry } from './registry.js';
import { writeAudit } from '../audit/index.js';

const rights = z.array(z.enum(RIGHTS)).min(1).max(RIGHTS.length);
const createBody = z.object({ resource: z.string().min(1), resourceUid: z.string().min(1), subject: subjectSchema, rights }).strict();
const updateBody = z.object({ rights, version: z.number().int().positive() }).strict();
const deleteBody = z.object({ version: z.number().int().positive() }).strict();
const entrySchema = z.object({
  uid: z.string(),
  version: z.number().int(),
  resource: z.string(),
  resourceUid: z.string(),
  subject: z.string(),
  rights,
});

/**
 * /api/acls: read and change a record's own ACL. The caller needs the share right on the record,
 * checked like any access to it — so for mailboxes and folders trusted roles never count.
 */
export function aclRouter(registry: ResourceRegistry, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const repo = () => deps.store.repo<AclEntryRecord>(AclEntryModel);

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

  async function lastOwnerGuard(ctx: Ctx, entry: Row<AclEntryRecord>, nextRights: readonly string[] | null): Promise<void> {
    if (!entry.rights.includes('owner') || nextRights?.includes('owner')) return;
    const owners = (
      await ctx.store.repo<AclEntryRecord>(AclEntryModel).list({ filter: { resourceUid: entry.resourceUid }, limit: 1000 })
    ).filter((e) => e.rights.includes('owner'));
    if (owners.length <= 1 && entry.resource === 'mailboxes') throw new ApiError('api-120', 'a mailbox keeps at least one owner');
  }

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
  const wrap =
    (fn: (ctx: Ctx, req: Request, res: Response) => Promise<void>) => async (req: Request, res: Response, next: (e?: unknown) => void) => {
      try {
        await fn(ctxOf(req, deps), req, res);
      } catch (e) {
        next(e);
      }
    };
  const tags = ['acls'];
  const entry = jsonSchema(entrySchema);

  router.get(
    '/api/acls',
    wrap(async (ctx, req, res) => {
      const q = parseOrThrow(
        z.object({ resource: z.string().min(1), uid: z.string().min(1) }).strict(),
        req.query,
        'GET /api/acls needs ?resource=<name>&uid=<record uid>',
      );
      await target(ctx, q.resource, q.uid);
      res.json((await repo().list({ filter: { resourceUid: q.uid }, limit: 1000 })).map(view));
    }),
  );
  openapi.add('get', '/api/acls', {
    operationId: 'acls_list',
    summary: "List a record's own ACL entries",
    tags,
    auth: 'signed-in',
    description: 'Needs the share right on the record. A trusted role can neither read nor change mailbox and folder ACLs.',
    parameters: [
      { name: 'resource', in: 'query', required: true, schema: { type: 'string' } },
      { name: 'uid', in: 'query', required: true, schema: { type: 'string' } },
    ],
    responses: { 200: { description: 'entries', schema: { type: 'array', items: entry } } },
  });

  router.post(
    '/api/acls',
    wrap(async (ctx, req, res) => {
      const body = parseOrThrow(createBody, req.body, 'invalid ACL entry');
      const { decl, rec } = await target(ctx, body.resource, body.resourceUid);
      const mailboxUid = decl.mailboxField ? (rec[decl.mailboxField] as string) : null;
      const created = await repo().create({ ...body, mailboxUid });
      await writeAudit(ctx.store, ctx, {
        action: 'acls.create',
        resource: body.resource,
        resourceUid: body.resourceUid,
        after: view(created),
      });
      res.status(201).json(view(created));
    }),
  );
  openapi.add('post', '/api/acls', {
    operationId: 'acls_create',
    summary: 'Grant rights on a record',
    tags,
    auth: 'signed-in',
    description:
      'Subjects: user:<uid>, role:<name>, authenticated. Rights: read, write, create, delete, share, owner. One entry per subject and record (409 api-112 otherwise).',
    requestBody: { schema: jsonSchema(createBody, 'input') },
    responses: { 201: { description: 'created', schema: entry } },
  });

  async function loadEntry(ctx: Ctx, uid: string): Promise<Row<AclEntryRecord>> {
    const e = await repo().get(uid);
    if (!e) throw notFound();
    await target(ctx, e.resource, e.resourceUid);
    return e;
  }

  router.put(
    '/api/acls/:id',
    wrap(async (ctx, req, res) => {
      const body = parseOrThrow(updateBody, req.body, 'invalid ACL update');
      const e = await loadEntry(ctx, String(req.params.id));
      await lastOwnerGuard(ctx, e, body.rights);
      const updated = await repo().update(e.uid, { rights: body.rights }, { expectedVersion: body.version });
      await writeAudit(ctx.store, ctx, {
        action: 'acls.update',
        resource: e.resource,
        resourceUid: e.resourceUid,
        before: view(e),
        after: view(updated),
      });
      res.json(view(updated));
    }),
  );
  openapi.add('put', '/api/acls/:id', {
    operationId: 'acls_update',
    summary: 'Change the rights of an ACL entry',
    tags,
    auth: 'signed-in',
    requestBody: { schema: jsonSchema(updateBody, 'input') },
    responses: { 200: { description: 'updated', schema: entry } },
  });

  router.delete(
    '/api/acls/:id',
    wrap(async (ctx, req, res) => {
      const raw =
        (req.body as { version?: unknown } | undefined)?.version ??
        (typeof req.query.version === 'string' ? Number(req.query.version) : undefined);
      const { version } = parseOrThrow(deleteBody, { version: raw }, 'version is required to delete (in the body or ?version=)');
      const e = await loadEntry(ctx, String(req.params.id));
      await lastOwnerGuard(ctx, e, null);
      await repo().delete(e.uid, { expectedVersion: version });
      await writeAudit(ctx.store, ctx, { action: 'acls.delete', resource: e.resource, resourceUid: e.resourceUid, before: view(e) });
      res.status(204).end();
    }),
  );
  openapi.add('delete', '/api/acls/:id', {
    operationId: 'acls_delete',
    summary: 'Remove an ACL entry',
    tags,
    auth: 'signed-in',
    parameters: [{ name: 'version', in: 'query', schema: { type: 'integer' } }],
    responses: { 204: { description: 'removed' } },
  });

  return router;
}
