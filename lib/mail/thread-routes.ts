import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import { schemasOf, type ResourceService } from '../resources/index.js';
import type { Ctx, Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { messagesResource } from './messages-resource.js';
import { MessageModel, type Message } from './messages.js';
import type { Folder } from './folders.js';
import { ensureThreads, ThreadModel, type Thread } from './threads.js';

export const threadQuery = z
  .object({
    folderUid: z.string().min(1).max(64),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    page: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
  .strict();

const conversation = z.object({
  threadId: z.string().describe('the Message-ID that starts the conversation (the messages’ threadId)'),
  count: z.number().int().describe('messages of the conversation in this folder'),
  unreadCount: z.number().int().describe('of them unread'),
  message: schemasOf(messagesResource).record.describe('the newest of them, as GET /api/mail/messages/:id answers it'),
});

/** One page of a folder's conversations, newest first, and how many there are. */
async function conversations(ctx: Ctx, service: ResourceService, query: z.infer<typeof threadQuery>) {
  const loaded = (await service.load(ctx, service.registry.get('folders'), query.folderUid, 'read')) as unknown as Row<Folder>;
  const folder = await ensureThreads(ctx.store, loaded);
  const repo = ctx.store.repo<Thread>(ThreadModel);
  const [threads, total] = await Promise.all([
    repo.list({
      filter: { folderUid: folder.uid },
      sort: [
        { field: 'latestDate', dir: 'desc' },
        { field: 'latestUid', dir: 'desc' },
      ],
      limit: query.limit,
      offset: query.page * query.limit,
    }),
    repo.count({ folderUid: folder.uid }),
  ]);
  const heads = threads.length
    ? await ctx.store
        .repo<Message>(MessageModel)
        .list({ filter: { folderUid: folder.uid, uid: { $in: threads.map((t) => t.latestUid) } }, limit: threads.length })
    : [];
  const byUid = new Map(heads.map((m) => [m.uid, m]));
  const decl = service.registry.get('messages');
  const items = threads.flatMap((t) => {
    const m = byUid.get(t.latestUid);
    // A head moved away between the two reads: the conversation shows again on the next read.
    return m ? [{ threadId: t.threadId, count: t.count, unreadCount: t.unread, message: service.view(decl, m as never) }] : [];
  });
  return { items, total };
}

/** GET /api/mail/threads: a folder's messages as conversations (one row per threadId), the list the web app shows by default. */
export function threadRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/threads',
    operationId: 'mail_threads',
    tags: ['mail/messages'],
    auth: 'signed-in',
    summary:
      'A folder’s conversations, newest first: one entry per threadId with how many of its messages are in the folder, how many are unread, and the newest of them; limit (≤ 1000) and page (zero-based); X-Total-Count counts the conversations',
    description:
      'The messages of one conversation are GET /api/mail/messages?threadId=…. A folder the caller cannot read answers 404, as its messages do.',
    query: threadQuery,
    response: z.array(conversation).describe('conversations, the newest message first'),
    handler: async (ctx, { query }, _req, res) => {
      const { items, total } = await conversations(ctx, service, query);
      res.set('X-Total-Count', String(total));
      return items;
    },
  });
  return router;
}
