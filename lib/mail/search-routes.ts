import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import { schemasOf, type ResourceService } from '../resources/index.js';
import type { Deps } from '../context/index.js';
import { messagesResource } from './messages-resource.js';
import { searchFor, searchQuery } from './search.js';

export function searchRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/search',
    operationId: 'mail_search',
    summary:
      'Search one mailbox: free text over subject, addresses and the plain text of unencrypted bodies, with filters; newest first, paginated (page from 0)',
    description:
      'Without mailboxUid the mailboxes the caller owns are searched (none owned: an empty list); a mailbox shared with them is searched by naming it.',
    tags: ['mail/search'],
    auth: 'signed-in',
    query: searchQuery,
    response: z.array(schemasOf(messagesResource).record).describe('messages, newest first'),
    handler: (ctx, { query }) => searchFor(ctx, service, query),
  });
  return router;
}
