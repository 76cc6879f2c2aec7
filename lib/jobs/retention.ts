import { readRetentionPolicy, retentionDays, RETENTION_CLASSES, ROLE_OF_CLASS, type RetentionClass } from '../settings/index.js';
import { AuditEntryModel, type AuditEntry } from '../audit/index.js';
import { MatterModel, type Matter } from '../escrow/index.js';
import { FolderModel, freeRaw, MessageModel, publishFolder, unfile, type Folder, type Message } from '../mail/index.js';
import type { Deps } from '../context/index.js';
import { type Row, type Store } from '../storage/index.js';
import type { PeriodicJob } from './periodic.js';

// The retention job (Spec: /api/system/retention-policy). Deletes messages past the age of
// their folder class, with the bookkeeping of the message delete path (lib/mail unfile: folder
// counts, mailbox usage, blob references; the raw blob goes once nothing refers to it). Never
// touches held mail: a message of a custodian of an open escrow matter whose Date or arrival falls
// within the matter's date range (what the matter's search sees, and what arrived during it).

const DAY_MS = 86_400_000;
const FOLDER_PAGE = 500;

export interface RetentionResult extends Record<string, unknown> {
  deleted: number;
  /** Old enough to go, kept for a legal hold. */
  held: number;
  bytes: number;
  byClass: Partial<Record<RetentionClass, number>>;
}

type Range = { from: number; to: number };

/** Date ranges held per custodian mailbox, from every open matter. */
export async function legalHolds(store: Store): Promise<Map<string, Range[]>> {
  const out = new Map<string, Range[]>();
  for (let offset = 0; ; offset += FOLDER_PAGE) {
    const matters = await store
      .repo<Matter>(MatterModel)
      .list({ filter: { state: 'open' }, sort: [{ field: 'uid', dir: 'asc' }], limit: FOLDER_PAGE, offset });
    for (const m of matters) {
      const range = { from: new Date(m.from).getTime(), to: new Date(m.to).getTime() };
      for (const c of m.custodians) out.set(c, [...(out.get(c) ?? []), range]);
    }
    if (matters.length < FOLDER_PAGE) return out;
  }
}

export function isHeld(msg: Pick<Message, 'date'> & { createdAt: Date }, ranges: readonly Range[]): boolean {
  const times = [new Date(msg.date).getTime(), new Date(msg.createdAt).getTime()];
  return ranges.some((r) => times.some((t) => t >= r.from && t <= r.to));
}

async function ageOutFolder(
  deps: Deps,
  folder: Row<Folder>,
  cutoff: Date,
  ranges: readonly Range[],
  batchSize: number,
  result: RetentionResult,
): Promise<number> {
  const repo = deps.store.repo<Message>(MessageModel);
  let kept = 0;
  let removed = 0;
  for (;;) {
    // Both the Date header and the arrival must be old: a forged old Date or an import of old mail is not aged out on arrival.
    const batch = await repo.list({
      filter: { folderUid: folder.uid, date: { $lt: cutoff }, createdAt: { $lt: cutoff } },
      sort: [
        { field: 'date', dir: 'asc' },
        { field: 'uid', dir: 'asc' },
      ],
      limit: batchSize,
      offset: kept,
    });
    if (!batch.length) break;
    const doomed = batch.filter((m) => !isHeld(m, ranges));
    kept += batch.length - doomed.length;
    result.held += batch.length - doomed.length;
    const gone: Array<Row<Message>> = [];
    if (doomed.length) {
      await deps.store.transaction(async (tx) => {
        for (const m of doomed) {
          if (await tx.repo(MessageModel).delete(m.uid)) {
            await unfile(tx, m as never);
            gone.push(m);
          }
        }
      });
    }
    for (const m of gone)
      deps.events.publish([m.folderUid], {
        type: 'message',
        action: 'delete',
        data: { uid: m.uid, folderUid: m.folderUid, mailboxUid: m.mailboxUid },
      });
    await freeRaw(
      deps,
      gone.map((m) => m.blobId),
    );
    removed += gone.length;
    result.bytes += gone.reduce((n, m) => n + m.size, 0);
    if (batch.length < batchSize) break;
  }
  if (removed) publishFolder(deps, await deps.store.repo<Folder>(FolderModel).get(folder.uid));
  return removed;
}

/** One pass over every folder class with an age; `now` is the job's clock (tests move it). */
export async function runRetention(deps: Deps, opts: { now?: Date; batchSize?: number } = {}): Promise<RetentionResult> {
  const now = opts.now ?? new Date();
  const batchSize = opts.batchSize ?? deps.config.get('mail:jobs:retention:batch_size');
  const policy = await readRetentionPolicy(deps);
  const result: RetentionResult = { deleted: 0, held: 0, bytes: 0, byClass: {} };
  const classes = RETENTION_CLASSES.filter((c) => retentionDays(policy, c) !== null);
  if (!classes.length) return result;
  const holds = await legalHolds(deps.store);
  for (const cls of classes) {
    const cutoff = new Date(now.getTime() - retentionDays(policy, cls)! * DAY_MS);
    let n = 0;
    for (let offset = 0; ; offset += FOLDER_PAGE) {
      const folders = await deps.store
        .repo<Folder>(FolderModel)
        .list({ filter: { role: ROLE_OF_CLASS[cls] }, sort: [{ field: 'uid', dir: 'asc' }], limit: FOLDER_PAGE, offset });
      for (const f of folders) n += await ageOutFolder(deps, f, cutoff, holds.get(f.mailboxUid) ?? [], batchSize, result);
      if (folders.length < FOLDER_PAGE) break;
    }
    if (n) result.byClass[cls] = n;
    result.deleted += n;
  }
  if (result.deleted || result.held) {
    // The deletions are an administrative change made by the deployment's policy: audited.
    await deps.store.repo<AuditEntry>(AuditEntryModel).create({
      actor: 'svcmail-worker',
      actorVia: 'job',
      action: 'retention.run',
      resource: 'retention-policy',
      resourceUid: null,
      ip: null,
      requestId: null,
      before: null,
      after: null,
      details: { deleted: result.deleted, held: result.held, bytes: result.bytes, byClass: result.byClass, policyVersion: policy.version },
    });
  }
  return result;
}

/** The worker's schedule of the job (mail:jobs:retention:*). */
export function retentionJob(deps: Deps): PeriodicJob<RetentionResult> {
  return {
    name: 'retention',
    periodMs: deps.config.get('mail:jobs:retention:interval_seconds') * 1000,
    leaseMs: deps.config.get('mail:jobs:retention:lease_seconds') * 1000,
    run: () => runRetention(deps),
  };
}
