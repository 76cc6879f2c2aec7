// The administrative actions on the ingest queue and the quarantine beyond the generic routes:
// queue an entry again, read a held message's headers, release it to the Inbox. Each is audited.
// The routes in admin-routes.ts call these (after the trusted-role, fresh-elevation check).
import { writeAudit } from '../audit/index.js';
import type { Ctx } from '../context/index.js';
import { ApiError, notFound } from '../errors/index.js';
import type { MailPort } from './mail-port.js';
import { IngestEntryModel, QuarantineModel, type IngestEntry, type QuarantineItem } from './models.js';
import { wakeWorkers } from './wake.js';

/** A failed (or any finished) entry goes back to queued with its attempts reset; the worker is woken. */
export async function retryEntry(ctx: Ctx, uid: string) {
  const repo = ctx.store.repo<IngestEntry>(IngestEntryModel);
  const entry = await repo.get(uid);
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
  wakeWorkers(ctx, 'scan');
  return { uid: updated.uid, version: updated.version, state: updated.state };
}

async function heldItem(ctx: Ctx, uid: string) {
  const item = await ctx.store.repo<QuarantineItem>(QuarantineModel).get(uid);
  if (!item) throw notFound();
  return item;
}

/** The header block of a held message, never its body. */
export async function quarantineHeaders(ctx: Ctx, uid: string) {
  const item = await heldItem(ctx, uid);
  await writeAudit(ctx.store, ctx, { action: 'quarantine.headers', resource: 'quarantine', resourceUid: item.uid });
  return { uid: item.uid, headers: item.headers };
}

/**
 * Files a held message in its mailbox's Inbox (counts, quota and events as on delivery), removes it
 * from the quarantine, marks its entry delivered and announces the delivery (released: true).
 */
export async function releaseQuarantined(ctx: Ctx, port: MailPort, uid: string) {
  const item = await heldItem(ctx, uid);
  const raw = await port.loadRaw(item.rawRef);
  const filed = await port.file({
    mailboxUid: item.mailboxUid,
    folderRole: 'inbox',
    raw,
    prepared: await port.prepare(raw),
    idempotencyKey: `release:${item.uid}`,
    rawRef: item.rawRef,
  });
  await ctx.store.repo<QuarantineItem>(QuarantineModel).delete(item.uid);
  await ctx.store
    .repo<IngestEntry>(IngestEntryModel)
    .updateMany({ uid: item.entryUid }, { state: 'delivered', folderRole: 'inbox', messageUid: filed.messageUid, finishedAt: new Date() });
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
  return { uid: item.uid, messageUid: filed.messageUid, folderRole: 'inbox' as const };
}
