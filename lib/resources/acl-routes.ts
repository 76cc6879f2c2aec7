import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { aclActions, aclDeleteBody, aclEntrySchema, aclGrantBody, aclUpdateBody } from './acl-actions.js';
import type { ResourceRegistry } from './registry.js';

/**
 * /api/acls: read and change a record's own ACL. The caller needs the share right on the record,
 * checked like any access to it — so for mailboxes and folders trusted roles never count.
 */
export function aclRouter(registry: ResourceRegistry, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const acl = aclActions(registry);
  const tags = ['acls'];
  const auth = 'signed-in' as const;

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/acls',
    operationId: 'acls_list',
    summary: "List a record's own ACL entries",
    description: 'Needs the share right on the record. A trusted role can neither read nor change mailbox and folder ACLs.',
    tags,
    auth,
    query: z.object({ resource: z.string().min(1), uid: z.string().min(1) }),
    response: z.array(aclEntrySchema),
    handler: (ctx, { query }) => acl.list(ctx, query.resource, query.uid),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/acls',
    operationId: 'acls_create',
    summary: 'Grant rights on a record',
    description:
      'Subjects: user:<uid>, role:<name>, authenticated. Rights: read, write, create, delete, share, owner. One entry per subject and record (409 api-112 otherwise).',
    tags,
    auth,
    body: aclGrantBody,
    status: 201,
    response: aclEntrySchema,
    handler: (ctx, { body }) => acl.grant(ctx, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'put',
    path: '/api/acls/:id',
    operationId: 'acls_update',
    summary: 'Change the rights of an ACL entry',
    tags,
    auth,
    body: aclUpdateBody,
    response: aclEntrySchema,
    handler: (ctx, { params, body }) => acl.update(ctx, params.id, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'delete',
    path: '/api/acls/:id',
    operationId: 'acls_delete',
    summary: 'Remove an ACL entry',
    description: 'version in the body ({"version": n}) or ?version=n; a stale one answers 409 api-108.',
    tags,
    auth,
    query: z.object({ version: z.coerce.number().int().positive().optional() }),
    body: aclDeleteBody,
    bodyOptional: true,
    status: 204,
    handler: (ctx, { params, query, body }) => acl.remove(ctx, params.id, body?.version ?? query.version),
  });

  return router;
}
