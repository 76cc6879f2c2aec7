import express, { type Request, type Response, type Router } from 'express';
import { requireTrusted } from '../auth/index.js';
import { writeAudit } from '../audit/index.js';
import { ApiError, notFound } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import type { Ctx } from '../context/index.js';
import type { IngestDeps } from './accept.js';
import { IngestEntryModel, QuarantineModel, type IngestEntry, type QuarantineItem } from './models.js';
import { wakeWorkers } from './wake.js';

type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;

/** Administrative actions beyond the generic routes: retry, headers, release (trusted role, fresh elevation, audited). */
export function ingestAdminRouter(deps: IngestDeps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const add = (method: 'get' | 'post', path: string, doc: { operationId: string; summary: string; description: string }, fn: Handler) => {
    router[method](path, async (req, res, next) => {
      try {
        const ctx = ctxOf(req, deps);
        requireTrusted(ctx.principal, ctx.config, { fresh: true });
        await fn(ctx, req, res);
      } catch (e) {
        next(e);
      }
    });
    openapi.add(method, path, {
      ...doc,
      tags: [path.split('/')[3] === 'quarantine' ? 'mail/quarantine' : 'mail/ingest-queue'],
      auth: 'trusted-fresh',
      responses: { 200: { description: 'done' } },
    });
  };

  add(
    'post',
    '/api/mail/ingest-queue/:id/retry',
    {
      operationId: 'mail_ingest_queue_retry',
      summary: 'Queue an entry again',
      description: 'A failed (or any finished) entry goes back to queued with its attempts reset; the worker is woken.',
    },
    async (ctx, req, res) => {
      const repo = ctx.store.repo<IngestEntry>(IngestEntryModel);
      const entry = await repo.get(String(req.params.id));
      if (!entry) throw notFound();
      if (entry.state === 'queued') throw new ApiError('api-120', 'the entry is already queued');
      const updated = await repo.update(entry.uid, {
        state: 'queued',
        attempts: 0,
        nextAttemptAt: new Date(),
        lastError: null,
        finishedAt: null,
      });
      await writeAudit(ctx.store, ctx, {
        action: 'ingest-queue.retry',
        resource: 'ingest-queue',
        resourceUid: entry.uid,
        details: { previousState: entry.state },
      });
      wakeWorkers(ctx.config, 'scan');
      res.json({ uid: updated.uid, version: updated.version, state: updated.state });
    },
  );

  add(
    'get',
    '/api/mail/quarantine/:id/headers',
    {
      operationId: 'mail_quarantine_headers',
      summary: 'Header block of a held message',
      description: 'The headers only; never the body. Audited.',
    },
    async (ctx, req, res) => {
      const item = await ctx.store.repo<QuarantineItem>(QuarantineModel).get(String(req.params.id));
      if (!item) throw notFound();
      await writeAudit(ctx.store, ctx, { action: 'quarantine.headers', resource: 'quarantine', resourceUid: item.uid });
      res.json({ uid: item.uid, headers: item.headers });
    },
  );

  add(
    'post',
    '/api/mail/quarantine/:id/release',
    {
      operationId: 'mail_quarantine_release',
      summary: 'Release a held message to the Inbox',
      description:
        'Files the message in the recipient mailbox Inbox (counts, quota and events as on delivery) and removes it from the quarantine. Audited.',
    },
    async (ctx, req, res) => {
      const qrepo = ctx.store.repo<QuarantineItem>(QuarantineModel);
      const item = await qrepo.get(String(req.params.id));
      if (!item) throw notFound();
      const raw = await deps.port.loadRaw(item.rawRef);
      const filed = await deps.port.file({
        mailboxUid: item.mailboxUid,
        folderRole: 'inbox',
        raw,
        prepared: await deps.port.prepare(raw),
        idempotencyKey: `release:${item.uid}`,
        rawRef: item.rawRef,
      });
      await qrepo.delete(item.uid);
      await ctx.store
        .repo<IngestEntry>(IngestEntryModel)
        .updateMany(
          { uid: item.entryUid },
          { state: 'delivered', folderRole: 'inbox', messageUid: filed.messageUid, finishedAt: new Date() },
        );
      await writeAudit(ctx.store, ctx, {
        action: 'quarantine.release',
        resource: 'quarantine',
        resourceUid: item.uid,
        details: { mailboxUid: item.mailboxUid, reason: item.reason, messageUid: filed.messageUid },
      });
      ctx.events.emitMail('message.delivered', {
        mailboxUid: item.mailboxUid,
        messageUid: filed.messageUid,
        folderUid: filed.folderUid ?? null,
        folderRole: 'inbox',
        junk: false,
        entryUid: item.entryUid,
        released: true,
      });
      res.json({ uid: item.uid, messageUid: filed.messageUid, folderRole: 'inbox' });
    },
  );
  return router;
}
