// Mailboxes assigned to an escrow scope (Spec: Key vault, escrow wrap): a holder assigns a mailbox,
// its owner's client reads the scope certificate and adds the escrow wrap, a holder unassigns it
// again. Service functions: scope-routes.ts and mailbox-info.ts declare the routes that call them.
import { createHash } from 'node:crypto';
import { X509Certificate } from '@peculiar/x509';
import { ApiError, notFound } from '../errors/index.js';
import { KeyVaultModel, loadMailbox, setEscrowScope } from '../keys/index.js';
import { MailboxModel } from '../mail/index.js';
import type { Ctx } from '../context/index.js';
import { escrowAudit, scopeForHolder } from './access.js';
import { EscrowScopeModel, MatterModel, type Matter, type Scope } from './models.js';
import { currentEscrowWrap, type Vault } from './vaults.js';

const vaults = (ctx: Pick<Ctx, 'store'>) => ctx.store.repo<Vault>(KeyVaultModel);

/** The owner's client watches its mailbox channel: an assignment asks it to add (or drop) the escrow wrap. */
const tellOwner = (ctx: Ctx, mailboxUid: string, escrowScopeUid: string | null) =>
  ctx.events.publish([mailboxUid], { type: 'keyvault', action: 'update', data: { mailboxUid, escrowScopeUid } });

/** Assigns a mailbox to the scope (again: nothing changes); one assigned to another scope is refused. */
export async function assignMailbox(ctx: Ctx, scopeUid: string, mailboxUid: string): Promise<{ scopeUid: string; mailboxUid: string }> {
  const scope = await scopeForHolder(ctx, scopeUid, 'scope.assign', { mailboxUid });
  if (!(await ctx.store.repo(MailboxModel).get(mailboxUid))) throw notFound('No such mailbox');
  const vault = await vaults(ctx).findOne({ mailboxUid });
  // Moving a mailbox would drop another scope's escrow wrap: that scope's holders unassign it first.
  if (vault?.escrowScopeUid && vault.escrowScopeUid !== scope.uid)
    throw new ApiError('api-120', 'the mailbox is assigned to another escrow scope; a holder of that scope unassigns it first');
  if (vault?.escrowScopeUid !== scope.uid) {
    await ctx.store.transaction(async (tx) => {
      await setEscrowScope(tx, mailboxUid, scope.uid);
      await escrowAudit({ ...ctx, store: tx }, 'scope.assign', scope.uid, { mailboxUid });
    });
    tellOwner(ctx, mailboxUid, scope.uid);
  }
  return { scopeUid: scope.uid, mailboxUid };
}

/** The scope's mailboxes, and whether each has an escrow wrap of its current master-key generation. */
export async function assignedMailboxes(ctx: Ctx, scopeUid: string): Promise<Array<{ mailboxUid: string; hasEscrowWrap: boolean }>> {
  const scope = await scopeForHolder(ctx, scopeUid);
  const rows = await vaults(ctx).list({ filter: { escrowScopeUid: scope.uid }, limit: 10_000 });
  return rows.map((v) => ({ mailboxUid: v.mailboxUid, hasEscrowWrap: Boolean(currentEscrowWrap(v, scope.uid)) }));
}

/** Unassigns a mailbox that no open matter of the scope names; its escrow wrap goes with it. */
export async function unassignMailbox(ctx: Ctx, scopeUid: string, mailboxUid: string): Promise<void> {
  const scope = await scopeForHolder(ctx, scopeUid, 'scope.unassign', { mailboxUid });
  const vault = await vaults(ctx).findOne({ mailboxUid });
  if (vault?.escrowScopeUid !== scope.uid) throw notFound('The mailbox is not assigned to this scope');
  const open = await ctx.store.repo<Matter>(MatterModel).list({ filter: { scopeUid: scope.uid, state: 'open' }, limit: 10_000 });
  const holding = open.filter((m) => m.custodians.includes(mailboxUid)).map((m) => m.uid);
  if (holding.length) throw new ApiError('api-120', `the mailbox is a custodian of open matters (${holding.join(', ')}); close them first`);
  await ctx.store.transaction(async (tx) => {
    // The escrow wrap is removed, not kept stale: nothing addressed to this scope stays releasable.
    await setEscrowScope(tx, mailboxUid, null);
    await escrowAudit({ ...ctx, store: tx }, 'scope.unassign', scope.uid, {
      mailboxUid,
      escrowWrapRemoved: vault.wraps.some((w) => w.method === 'escrow'),
    });
  });
  tellOwner(ctx, mailboxUid, null);
}

export interface MailboxEscrowInfo {
  mailboxUid: string;
  masterKeyGeneration: number;
  scope: { uid: string; name: string; certificatePem: string; fingerprint: string } | null;
  hasEscrowWrap: boolean;
  escrowWrapId: string | null;
  needsEscrowWrap: boolean;
}

/**
 * For the mailbox's readers (trusted roles stripped: an administrator gets 404 like anyone else):
 * the scope the mailbox is assigned to and its certificate, so the owner's client can add the
 * escrow wrap. The holders and M are not shown.
 */
export async function mailboxEscrowInfo(ctx: Ctx, mailboxUid: string): Promise<MailboxEscrowInfo> {
  await loadMailbox(ctx, mailboxUid, 'read');
  const v = await vaults(ctx).findOne({ mailboxUid });
  const scope = v?.escrowScopeUid ? await ctx.store.repo<Scope>(EscrowScopeModel).get(v.escrowScopeUid) : null;
  const wrap = scope && v ? currentEscrowWrap(v, scope.uid) : undefined;
  return {
    mailboxUid,
    masterKeyGeneration: v?.masterKeyGeneration ?? 0,
    scope: scope
      ? {
          uid: scope.uid,
          name: scope.name,
          certificatePem: scope.certificatePem,
          fingerprint: createHash('sha256')
            .update(Buffer.from(new X509Certificate(scope.certificatePem).rawData))
            .digest('hex'),
        }
      : null,
    hasEscrowWrap: Boolean(wrap),
    escrowWrapId: (wrap?.id as string | undefined) ?? null,
    needsEscrowWrap: Boolean(scope && v?.enrolled && !wrap),
  };
}
