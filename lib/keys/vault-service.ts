import { randomUUID } from 'node:crypto';
import type { Right } from '../acl/index.js';
import { writeAudit } from '../audit/index.js';
import { ApiError, invalid, notFound, parseOrThrow } from '../errors/index.js';
import { MailboxModel, mailboxesResource } from '../mail/index.js';
import { fingerprintOf, parseCsr, pkiBackend, recordIssued, requireP256, revokeCertificate, spkiOf } from '../pki/index.js';
import { checkRecord, type AnyRecord } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import type { StoredWrap, VaultView, WrapInput } from './client/format.js';
import { syncDirectory } from '../mail/index.js';
import { KeyVaultModel, type KeyVault } from './models.js';
import { addWrapSchema, enrolSchema, type AddWrapBody, type EnrolBody } from './shapes.js';

// Spec: Key vault (per mailbox). Stores and checks ciphertext, public keys and certificates only.

type VaultRow = Row<KeyVault>;

/** The mailbox, checked with trusted roles stripped: invisible and missing both answer 404. */
export async function loadMailbox(ctx: Ctx, mailboxUid: string, right: Right): Promise<AnyRecord> {
  const rec = await ctx.store.repo<Record<string, unknown>>(MailboxModel).get(mailboxUid);
  if (!rec) throw notFound();
  await checkRecord(ctx, mailboxesResource, rec, right);
  return rec;
}

const vaults = (ctx: Pick<Ctx, 'store'>) => ctx.store.repo<KeyVault>(KeyVaultModel);

export async function findVault(ctx: Pick<Ctx, 'store'>, mailboxUid: string): Promise<VaultRow | null> {
  return vaults(ctx).findOne({ mailboxUid });
}

export async function viewOf(ctx: Ctx, mailboxUid: string, v: VaultRow | null): Promise<VaultView> {
  if (!v || !v.enrolled)
    return {
      mailboxUid,
      enrolled: false,
      masterKeyGeneration: v?.masterKeyGeneration ?? 0,
      escrowScopeUid: v?.escrowScopeUid ?? null,
      wraps: [],
    };
  return {
    mailboxUid,
    enrolled: true,
    masterKeyGeneration: v.masterKeyGeneration,
    escrowScopeUid: v.escrowScopeUid ?? null,
    signingPublicKey: v.signingPublicKey!,
    encryptionPublicKey: v.encryptionPublicKey!,
    sealedSigningKey: v.sealedSigningKey!,
    sealedEncryptionKey: v.sealedEncryptionKey!,
    encryptionCertificate: v.encryptionCertificate!,
    signingCertificate: v.signingCertificate ?? null,
    caCertificates: await pkiBackend(ctx.config)
      .caCertificates()
      .catch(() => []),
    wraps: v.wraps as unknown as StoredWrap[],
    version: v.version,
  };
}

export async function readVault(ctx: Ctx, mailboxUid: string): Promise<VaultView> {
  await loadMailbox(ctx, mailboxUid, 'read');
  return viewOf(ctx, mailboxUid, await findVault(ctx, mailboxUid));
}

function checkGeneration(v: VaultRow | null, expected: number): void {
  const current = v?.masterKeyGeneration ?? 0;
  if (current !== expected) throw new ApiError('api-108', `stale expectedMasterKeyGeneration: the vault is at generation ${current}`);
}

/** Binding and per-method rules of one wrap (Spec: each wrap bound to the mailbox and the method). */
function checkWrap(ctx: Ctx, v: Pick<KeyVault, 'escrowScopeUid'> | null, mailboxUid: string, w: WrapInput, path: string): void {
  if (w.mailboxUid !== mailboxUid)
    throw invalid(`${path}: the wrap is bound to another mailbox`, [{ path: `${path}.mailboxUid`, message: 'must be this mailbox' }]);
  if (w.method === 'escrow') {
    if (!v?.escrowScopeUid)
      throw new ApiError('api-120', 'this mailbox is not assigned to an escrow scope; an escrow wrap cannot be added');
    if (w.scopeUid !== v.escrowScopeUid)
      throw invalid(`${path}: the escrow wrap names another scope`, [
        { path: `${path}.scopeUid`, message: "must be the mailbox's escrow scope" },
      ]);
  }
  void ctx;
}

/** Adds a wrap to a list: password, recovery codes and escrow replace their predecessor; passkeys add up (same credential replaces). */
function mergeWrap(ctx: Ctx, list: StoredWrap[], w: WrapInput, generation: number): StoredWrap[] {
  const stored = { ...w, id: randomUUID(), masterKeyGeneration: generation, createdAt: new Date().toISOString() } as StoredWrap;
  const kept = list.filter(
    (x) => x.method !== w.method || (w.method === 'passkey' && (x as { credentialId?: string }).credentialId !== w.credentialId),
  );
  if (w.method === 'passkey' && kept.filter((x) => x.method === 'passkey').length >= ctx.config.get('mail:keys:max_passkeys')) {
    throw new ApiError('api-120', `at most ${ctx.config.get('mail:keys:max_passkeys')} passkeys`);
  }
  return [...kept, stored];
}

const unlockable = (list: StoredWrap[]) => list.some((w) => w.method !== 'escrow');

/** Validates the keys and issues the encryption certificate (same request, Spec: enrol keys). */
async function issueFor(ctx: Ctx, mailbox: AnyRecord, body: EnrolBody) {
  const signingSpki = Buffer.from(body.signingPublicKey, 'base64');
  await requireP256(signingSpki, 'signingPublicKey');
  const csr = await parseCsr(body.encryptionCsr, 'encryptionCsr');
  const encryptionSpki = spkiOf(csr);
  if (encryptionSpki.equals(signingSpki))
    throw invalid('the encryption and signing keys must differ', [{ path: 'encryptionCsr', message: 'same key as signingPublicKey' }]);
  const emails = [mailbox.address as string, ...((mailbox.aliases as string[]) ?? [])];
  const backend = pkiBackend(ctx.config);
  const issued = await backend.issue({ csr, emails, kind: 'encryption' });
  return { backend, issued, emails, encryptionPublicKey: encryptionSpki.toString('base64') };
}

async function writeKeys(
  ctx: Ctx,
  mailbox: AnyRecord,
  v: VaultRow | null,
  body: EnrolBody,
  generation: number,
  action: 'enroll' | 'rekey',
): Promise<VaultView> {
  const mailboxUid = mailbox.uid;
  let wraps: StoredWrap[] = [];
  body.wraps.forEach((w, i) => checkWrap(ctx, v, mailboxUid, w, `wraps.${i}`));
  for (const w of body.wraps) wraps = mergeWrap(ctx, wraps, w, generation);
  if (!unlockable(wraps))
    throw invalid('a vault needs a password, recovery codes or passkey wrap', [{ path: 'wraps', message: 'no unlock method' }]);
  const { backend, issued, emails, encryptionPublicKey } = await issueFor(ctx, mailbox, body);
  const signingChanged = v?.signingPublicKey !== body.signingPublicKey;
  const data = {
    mailboxUid,
    enrolled: true,
    masterKeyGeneration: generation,
    signingPublicKey: body.signingPublicKey,
    encryptionPublicKey,
    sealedSigningKey: body.sealedSigningKey,
    sealedEncryptionKey: body.sealedEncryptionKey,
    encryptionCertificate: issued.certPem,
    encryptionFingerprint: issued.fingerprint,
    signingCertificate: signingChanged ? null : (v?.signingCertificate ?? null),
    wraps: wraps as unknown as Record<string, unknown>[],
  };
  const saved = await ctx.store
    .transaction(async (tx) => {
      const txCtx = { ...ctx, store: tx };
      const repo = vaults(txCtx);
      const row = v ? await repo.update(v.uid, data, { expectedVersion: v.version }) : await repo.create({ ...data, escrowScopeUid: null });
      await recordIssued(tx, backend.name, mailboxUid, 'encryption', issued);
      await syncDirectory(tx, mailboxUid, emails);
      await writeAudit(tx, ctx, {
        action: `keyvault.${action}`,
        resource: 'keyvault',
        resourceUid: mailboxUid,
        details: { masterKeyGeneration: generation, encryptionCertificate: issued.fingerprint, methods: wraps.map((w) => w.method) },
      });
      return row;
    })
    .catch(async (e: unknown) => {
      // Nothing was stored (a concurrent change, most likely): the certificate just issued is withdrawn.
      await backend.revoke(issued.serial).catch(() => undefined);
      throw e;
    });
  if (v?.encryptionFingerprint && v.encryptionFingerprint !== issued.fingerprint) {
    await revokeCertificate(ctx.store, backend, v.encryptionFingerprint, `superseded by ${action}`).catch((e: unknown) =>
      ctx.log.warn({ err: e }, 'revoking the old encryption certificate failed'),
    );
  }
  ctx.events.publish([mailboxUid], { type: 'keyvault', action: 'update', data: { mailboxUid, masterKeyGeneration: generation } });
  return viewOf(ctx, mailboxUid, saved);
}

/** Enrols keys. `input` has the outline of an enrolment; its values are checked here, after the access check. */
export async function enrollVault(ctx: Ctx, mailboxUid: string, input: EnrolBody): Promise<VaultView> {
  const mailbox = await loadMailbox(ctx, mailboxUid, 'owner');
  const body = parseOrThrow(enrolSchema(ctx.config), input, 'invalid key enrolment');
  const v = await findVault(ctx, mailboxUid);
  checkGeneration(v, body.expectedMasterKeyGeneration);
  if (v?.enrolled) throw new ApiError('api-108', 'the vault is already enrolled; use rekey');
  return writeKeys(ctx, mailbox, v, body, 1, 'enroll');
}

/** Rekeys an enrolled vault; `input` as for enrollVault. */
export async function rekeyVault(ctx: Ctx, mailboxUid: string, input: EnrolBody): Promise<VaultView> {
  const mailbox = await loadMailbox(ctx, mailboxUid, 'owner');
  const body = parseOrThrow(enrolSchema(ctx.config), input, 'invalid rekey');
  const v = await findVault(ctx, mailboxUid);
  checkGeneration(v, body.expectedMasterKeyGeneration);
  if (!v?.enrolled) throw new ApiError('api-120', 'the vault is not enrolled yet');
  return writeKeys(ctx, mailbox, v, body, v.masterKeyGeneration + 1, 'rekey');
}

/** Adds a wrap. `input` has the outline of a wrap addition; its values are checked here, after the access check. */
export async function addWrap(ctx: Ctx, mailboxUid: string, input: AddWrapBody): Promise<VaultView> {
  await loadMailbox(ctx, mailboxUid, 'owner');
  const body = parseOrThrow(addWrapSchema(ctx.config), input, 'invalid wrap');
  const v = await findVault(ctx, mailboxUid);
  checkGeneration(v, body.expectedMasterKeyGeneration);
  if (!v?.enrolled) throw new ApiError('api-120', 'the vault is not enrolled yet');
  checkWrap(ctx, v, mailboxUid, body.wrap, 'wrap');
  const wraps = mergeWrap(ctx, v.wraps as unknown as StoredWrap[], body.wrap, v.masterKeyGeneration);
  const saved = await vaults(ctx).update(v.uid, { wraps: wraps as unknown as Record<string, unknown>[] }, { expectedVersion: v.version });
  ctx.events.publish([mailboxUid], {
    type: 'keyvault',
    action: 'update',
    data: { mailboxUid, masterKeyGeneration: saved.masterKeyGeneration },
  });
  return viewOf(ctx, mailboxUid, saved);
}

export async function removeWrap(ctx: Ctx, mailboxUid: string, wrapId: string, expectedMasterKeyGeneration: number): Promise<VaultView> {
  await loadMailbox(ctx, mailboxUid, 'owner');
  const v = await findVault(ctx, mailboxUid);
  checkGeneration(v, expectedMasterKeyGeneration);
  if (!v?.enrolled) throw notFound('No such wrap');
  const list = v.wraps as unknown as StoredWrap[];
  if (!list.some((w) => w.id === wrapId)) throw notFound('No such wrap');
  const left = list.filter((w) => w.id !== wrapId);
  if (!unlockable(left)) throw new ApiError('api-120', 'the last unlock method cannot be removed');
  const saved = await vaults(ctx).update(v.uid, { wraps: left as unknown as Record<string, unknown>[] }, { expectedVersion: v.version });
  ctx.events.publish([mailboxUid], {
    type: 'keyvault',
    action: 'update',
    data: { mailboxUid, masterKeyGeneration: saved.masterKeyGeneration },
  });
  return viewOf(ctx, mailboxUid, saved);
}

/**
 * For the escrow feature: assign a mailbox to a scope (or none). Leaving a scope drops the escrow wrap.
 * Administrative, no caller check here: the escrow routes check the caller.
 */
export async function setEscrowScope(store: Ctx['store'], mailboxUid: string, scopeUid: string | null): Promise<void> {
  const repo = store.repo<KeyVault>(KeyVaultModel);
  const v = await repo.findOne({ mailboxUid });
  if (!v) {
    await repo.create({ mailboxUid, enrolled: false, masterKeyGeneration: 0, wraps: [], escrowScopeUid: scopeUid });
    return;
  }
  const wraps = (v.wraps as unknown as StoredWrap[]).filter(
    (w) => w.method !== 'escrow' || (scopeUid !== null && (w as { scopeUid: string }).scopeUid === scopeUid),
  );
  await repo.update(v.uid, { escrowScopeUid: scopeUid, wraps: wraps as unknown as Record<string, unknown>[] });
}

/** The current encryption certificate of a mailbox (for local lookups). */
export async function certificateOf(
  ctx: Pick<Ctx, 'store'>,
  mailboxUid: string,
): Promise<{ certificate: string; fingerprint: string } | null> {
  const v = await findVault(ctx, mailboxUid);
  if (!v?.enrolled || !v.encryptionCertificate) return null;
  return { certificate: v.encryptionCertificate, fingerprint: v.encryptionFingerprint ?? fingerprintOf(v.encryptionCertificate) };
}
