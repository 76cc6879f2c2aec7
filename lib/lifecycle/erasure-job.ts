import { AclEntryModel } from '../acl/index.js';
import { MatterModel, type Matter } from '../escrow/index.js';
import { DistributionListModel, type DistributionList } from '../ingest/index.js';
import { freeRaw, MailboxModel, MessageModel, unfile, type Mailbox, type Message } from '../mail/index.js';
import { IssuedCertificateModel, pkiBackend, revokeCertificate, type IssuedCertificate } from '../pki/index.js';
import type { Deps } from '../context/index.js';
import { type ModelDef, type Row, type Store } from '../storage/index.js';
import { JobAborted, type Touch } from './export-job.js';
import { exportPath, removeFile, uploadPath } from './files.js';
import { ErasureRequestModel, ExportRequestModel, ImportRequestModel, type ErasureRequest } from './models.js';
import { ErasedAddressModel, type ErasedAddress } from '../mail/index.js';
import { InputError } from './import-sources.js';

export interface ErasureDeps extends Deps {
  /** Every model of the product: whatever carries a mailboxUid column is erased with the mailbox. */
  models: readonly ModelDef[];
}

const BATCH = 500;
/** Columns naming a raw message in the blob store. */
const BLOB_COLUMNS = ['blobId', 'rawRef'];

/** Open escrow matters that name the mailbox: a legal hold, so the mailbox cannot be erased. */
export async function holdsOn(store: Store, mailboxUid: string): Promise<string[]> {
  const open = await store.repo<Matter>(MatterModel).list({ filter: { state: 'open' }, limit: 10_000 });
  return open.filter((m) => m.custodians.includes(mailboxUid)).map((m) => m.uid);
}

/** One erasure run: the mailbox, the request, the deletions counted so far and the raw messages that may be left unreferenced. */
interface Erasure {
  deps: ErasureDeps;
  req: Row<ErasureRequest>;
  mailboxUid: string;
  /** Every model with a mailboxUid column (the erasure request itself stays). */
  withMailbox: ModelDef[];
  deleted: Record<string, number>;
  /** Blob ids the mailbox's records pointed at: removed at the end when nothing refers to them. */
  candidates: Set<string>;
  /** Adds n deleted rows of a table to the request's counts. */
  count(table: string, n: number): void;
  /** Records progress on the request; throws when another worker took the request over. */
  step(): Promise<void>;
}

/** Step 1: deletes the ways in (addresses, key directory, ACL entries) and writes a tombstone per address, in one transaction; returns the addresses. */
async function closeWaysIn(e: Erasure): Promise<string[]> {
  const { deps, req, mailboxUid: M } = e;
  const box = await deps.store.repo<Mailbox>(MailboxModel).get(M);
  const addresses = [
    ...new Set([req.address || box?.address || '', ...(req.aliases.length ? req.aliases : (box?.aliases ?? []))].filter(Boolean)),
  ];
  await deps.store.transaction(async (tx) => {
    const tombs = tx.repo<ErasedAddress>(ErasedAddressModel);
    for (const address of addresses) {
      if (!(await tombs.findOne({ address })))
        await tombs.create({ address, erasedAt: new Date(), erasedBy: req.requestedBy, requestUid: req.uid });
    }
    for (const m of e.withMailbox.filter((x) => ['mail_addresses', 'key_directory', 'acl_entries'].includes(x.table)))
      e.count(m.table, await tx.repo(m).deleteMany({ mailboxUid: M }));
    e.count('acl_entries', await tx.repo(AclEntryModel).deleteMany({ resourceUid: M }));
  });
  return addresses;
}

/** Step 2: removes the files of the mailbox's export and import requests and revokes its certificates where the backend keeps a list. */
async function removeFilesAndCertificates(e: Erasure): Promise<void> {
  const { deps, mailboxUid: M } = e;
  const { store } = deps;
  for (const x of await store.repo(ExportRequestModel).list({ filter: { mailboxUid: M }, limit: 10_000 }))
    await removeFile(exportPath(deps.config, x.uid));
  for (const i of await store.repo(ImportRequestModel).list({ filter: { mailboxUid: M }, limit: 10_000 }))
    await removeFile(uploadPath(deps.config, i.uid));
  for (const c of await store
    .repo<IssuedCertificate>(IssuedCertificateModel)
    .list({ filter: { mailboxUid: M, revokedAt: null }, limit: 10_000 })) {
    await revokeCertificate(store, pkiBackend(deps.config), c.fingerprint, 'mailbox erased').catch((err: unknown) =>
      deps.log.warn({ err: (err as Error).message, serial: c.serial }, 'erasure: revoking a certificate failed'),
    );
  }
}

/** Step 3: collects the raw messages other records of the mailbox point at (queue entries, quarantine, outbox). */
async function collectRawRefs(e: Erasure): Promise<void> {
  for (const m of e.withMailbox.filter((x) => x !== MessageModel && BLOB_COLUMNS.some((c) => c in x.columns))) {
    for (let page = 0; ; page++) {
      const rows = await e.deps.store
        .repo<Record<string, unknown>>(m)
        .list({ filter: { mailboxUid: e.mailboxUid }, limit: 1000, offset: page * 1000 });
      for (const r of rows) for (const c of BLOB_COLUMNS) if (typeof r[c] === 'string') e.candidates.add(r[c] as string);
      if (rows.length < 1000) break;
    }
  }
}

/** Step 4: deletes the mailbox's messages in batches through the delete path (counts, usage, blob references). */
async function deleteMessages(e: Erasure): Promise<void> {
  const { store } = e.deps;
  for (;;) {
    const batch = await store.repo<Message>(MessageModel).list({ filter: { mailboxUid: e.mailboxUid }, limit: BATCH });
    if (!batch.length) return;
    await store.transaction(async (tx) => {
      for (const m of batch) {
        if (await tx.repo(MessageModel).delete(m.uid)) {
          await unfile(tx, m as never);
          e.count('messages', 1);
          e.candidates.add(m.blobId);
        }
      }
    });
    await e.step();
  }
}

/** Step 4: deletes the mailbox's records of every other model. */
async function deleteEverythingElse(e: Erasure): Promise<void> {
  for (const m of e.withMailbox)
    if (m !== MessageModel) e.count(m.table, await e.deps.store.repo(m).deleteMany({ mailboxUid: e.mailboxUid }));
}

/**
 * Step 5: references by other names — escrow matter custodians (closed matters keep a marker, not
 * the uid) and distribution-list members (the erased addresses); then the mailbox record itself.
 */
async function dropReferences(e: Erasure, addresses: string[]): Promise<void> {
  const { store } = e.deps;
  const M = e.mailboxUid;
  for (const matter of await store.repo<Matter>(MatterModel).list({ limit: 10_000 })) {
    if (matter.custodians.includes(M))
      await store
        .repo<Matter>(MatterModel)
        .update(matter.uid, { custodians: matter.custodians.map((c) => (c === M ? `erased:${e.req.uid}` : c)) });
  }
  for (const list of await store.repo<DistributionList>(DistributionListModel).list({ limit: 10_000 })) {
    if (list.members.some((a) => addresses.includes(a)))
      await store
        .repo<DistributionList>(DistributionListModel)
        .update(list.uid, { members: list.members.filter((a) => !addresses.includes(a)) });
  }
  if (await store.repo(MailboxModel).delete(M)) e.count('mailboxes', 1);
}

/**
 * Erases a mailbox: first the ways in (addresses, key directory, ACL entries — the owner loses access
 * at once, delivery stops resolving), with a tombstone per address in the same transaction; then
 * every message through the delete path that keeps counts and blob references right; then every
 * record of every model that carries the mailbox's uid; then the mailbox. Blob files nothing needs
 * any more are released (deleted by the blob sweep after its grace period, lib/storage/blob/release.ts);
 * a blob another mailbox still references survives. Each step is
 * idempotent, so a worker that dies midway leaves work the next run finishes.
 *
 * Kept on purpose: the audit log (append-only, Spec: Audit log) and the erasure request itself, which
 * with the tombstones is the record that the mailbox existed and was erased, when and by whom.
 */
export async function runErasure(
  deps: ErasureDeps,
  req: Row<ErasureRequest>,
  touch: Touch,
): Promise<{ deleted: Record<string, number>; blobFilesRemoved: number }> {
  const M = req.mailboxUid;
  const holds = await holdsOn(deps.store, M);
  if (holds.length) throw new InputError(`the mailbox is a custodian of open escrow matters (${holds.join(', ')}): close them first`);
  const deleted: Record<string, number> = { ...req.deleted };
  const e: Erasure = {
    deps,
    req,
    mailboxUid: M,
    withMailbox: deps.models.filter((m) => 'mailboxUid' in m.columns && m !== ErasureRequestModel),
    deleted,
    candidates: new Set<string>(),
    count: (table, n) => {
      if (n) deleted[table] = (deleted[table] ?? 0) + n;
    },
    step: async () => {
      if (!(await touch({ deleted }))) throw new JobAborted('the erasure request was taken over');
    },
  };

  const addresses = await closeWaysIn(e);
  await e.step();
  await removeFilesAndCertificates(e);
  await collectRawRefs(e);
  await deleteMessages(e);
  await deleteEverythingElse(e);
  await dropReferences(e, addresses);
  // Messages and records once more, for a delivery that raced the first pass.
  await deleteMessages(e);
  await deleteEverythingElse(e);
  await e.step();
  const blobFilesRemoved = await freeRaw(deps, e.candidates);
  return { deleted, blobFilesRemoved };
}
