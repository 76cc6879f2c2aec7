import { AclEntryModel } from '../acl/index.js';
import { MatterModel, type Matter } from '../escrow/index.js';
import { DistributionListModel, type DistributionList } from '../ingest/index.js';
import { blobsOf, MailboxModel, MessageModel, unfile, type Mailbox, type Message } from '../mail/index.js';
import { IssuedCertificateModel, pkiBackend, revokeCertificate, type IssuedCertificate } from '../pki/index.js';
import type { Deps } from '../context/index.js';
import { BlobModel, type ModelDef, type Row, type Store } from '../storage/index.js';
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

/**
 * Erases a mailbox: first the ways in (addresses, key directory, ACL entries — the owner loses access
 * at once, delivery stops resolving), with a tombstone per address in the same transaction; then
 * every message through the delete path that keeps counts and blob references right; then every
 * record of every model that carries the mailbox's uid; then the mailbox. Blob files no record
 * refers to any more are deleted; a blob another mailbox still references survives. Each step is
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
  const { store } = deps;
  const M = req.mailboxUid;
  const holds = await holdsOn(store, M);
  if (holds.length) throw new InputError(`the mailbox is a custodian of open escrow matters (${holds.join(', ')}): close them first`);
  const deleted: Record<string, number> = { ...req.deleted };
  const count = (table: string, n: number) => {
    if (n) deleted[table] = (deleted[table] ?? 0) + n;
  };
  const step = async () => {
    if (!(await touch({ deleted }))) throw new JobAborted('the erasure request was taken over');
  };
  const withMailbox = deps.models.filter((m) => 'mailboxUid' in m.columns && m !== ErasureRequestModel);

  // 1. The ways in, and the tombstones, together.
  const box = await store.repo<Mailbox>(MailboxModel).get(M);
  const addresses = [
    ...new Set([req.address || box?.address || '', ...(req.aliases.length ? req.aliases : (box?.aliases ?? []))].filter(Boolean)),
  ];
  await store.transaction(async (tx) => {
    const tombs = tx.repo<ErasedAddress>(ErasedAddressModel);
    for (const address of addresses) {
      if (!(await tombs.findOne({ address })))
        await tombs.create({ address, erasedAt: new Date(), erasedBy: req.requestedBy, requestUid: req.uid });
    }
    for (const m of withMailbox.filter((x) => ['mail_addresses', 'key_directory', 'acl_entries'].includes(x.table)))
      count(m.table, await tx.repo(m).deleteMany({ mailboxUid: M }));
    count('acl_entries', await tx.repo(AclEntryModel).deleteMany({ resourceUid: M }));
  });
  await step();

  // 2. Files of its export and import requests; certificates revoked where the backend keeps a list.
  for (const e of await store.repo(ExportRequestModel).list({ filter: { mailboxUid: M }, limit: 10_000 }))
    await removeFile(exportPath(deps.config, e.uid));
  for (const i of await store.repo(ImportRequestModel).list({ filter: { mailboxUid: M }, limit: 10_000 }))
    await removeFile(uploadPath(deps.config, i.uid));
  for (const c of await store
    .repo<IssuedCertificate>(IssuedCertificateModel)
    .list({ filter: { mailboxUid: M, revokedAt: null }, limit: 10_000 })) {
    await revokeCertificate(store, pkiBackend(deps.config), c.fingerprint, 'mailbox erased').catch((e: unknown) =>
      deps.log.warn({ err: (e as Error).message, serial: c.serial }, 'erasure: revoking a certificate failed'),
    );
  }

  // 3. Raw messages other records of the mailbox point at (queue entries, quarantine, outbox).
  const candidates = new Set<string>();
  for (const m of withMailbox.filter((x) => x !== MessageModel && BLOB_COLUMNS.some((c) => c in x.columns))) {
    for (let page = 0; ; page++) {
      const rows = await store.repo<Record<string, unknown>>(m).list({ filter: { mailboxUid: M }, limit: 1000, offset: page * 1000 });
      for (const r of rows) for (const c of BLOB_COLUMNS) if (typeof r[c] === 'string') candidates.add(r[c] as string);
      if (rows.length < 1000) break;
    }
  }

  // 4. Messages, through the delete path (counts, usage, blob references), in batches; twice more at
  // the end for a delivery that raced the first pass.
  const messages = async () => {
    for (;;) {
      const batch = await store.repo<Message>(MessageModel).list({ filter: { mailboxUid: M }, limit: BATCH });
      if (!batch.length) return;
      await store.transaction(async (tx) => {
        for (const m of batch) {
          if (await tx.repo(MessageModel).delete(m.uid)) {
            await unfile(tx, m as never);
            count('messages', 1);
            candidates.add(m.blobId);
          }
        }
      });
      await step();
    }
  };
  const everythingElse = async () => {
    for (const m of withMailbox) if (m !== MessageModel) count(m.table, await store.repo(m).deleteMany({ mailboxUid: M }));
  };
  await messages();
  await everythingElse();

  // 5. References by other names: escrow matter custodians (closed matters keep a marker, not the
  // uid), distribution-list members (the erased addresses).
  for (const matter of await store.repo<Matter>(MatterModel).list({ limit: 10_000 })) {
    if (matter.custodians.includes(M))
      await store
        .repo<Matter>(MatterModel)
        .update(matter.uid, { custodians: matter.custodians.map((c) => (c === M ? `erased:${req.uid}` : c)) });
  }
  for (const list of await store.repo<DistributionList>(DistributionListModel).list({ limit: 10_000 })) {
    if (list.members.some((a) => addresses.includes(a)))
      await store
        .repo<DistributionList>(DistributionListModel)
        .update(list.uid, { members: list.members.filter((a) => !addresses.includes(a)) });
  }
  if (await store.repo(MailboxModel).delete(M)) count('mailboxes', 1);
  await messages();
  await everythingElse();
  await step();

  // 6. Blob files nothing refers to any more.
  let blobFilesRemoved = 0;
  const referencing = deps.models.filter((m) => BLOB_COLUMNS.some((c) => c in m.columns));
  for (const id of candidates) {
    if (!/^[0-9a-f]{64}$/.test(id) || (await store.repo(BlobModel).get(id))) continue;
    let used = false;
    for (const m of referencing) {
      for (const c of BLOB_COLUMNS) if (c in m.columns && (await store.repo(m).count({ [c]: id }))) used = true;
      if (used) break;
    }
    if (used) continue;
    if (!blobsOf(deps).locate(id)) continue;
    await blobsOf(deps).remove(id);
    blobFilesRemoved += 1;
  }
  return { deleted, blobFilesRemoved };
}
