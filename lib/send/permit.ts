import { allows, subjectsOf } from '../acl/index.js';
import { ApiError } from '../errors/index.js';
import { AddressModel, MailboxModel } from '../mail/index.js';
import { grantsFor, type ResourceDecl } from '../resources/index.js';
import { type Ctx } from '../context/index.js';

/**
 * Spec: send — From and Sender must be addresses the caller may use: an address (primary or alias)
 * of a mailbox they own, or of a mailbox shared with them with the sendAs right. Checked with trusted
 * roles stripped (an administrator may not send as anyone). Otherwise 403 api-102.
 */
export async function permitAddresses(ctx: Ctx, mailboxes: ResourceDecl, addresses: readonly string[]): Promise<void> {
  const subjects = subjectsOf(ctx.principal, ctx.config, { stripTrusted: true });
  for (const a of new Set(addresses.map((x) => x.trim().toLowerCase()).filter(Boolean))) {
    const rec = await ctx.store.repo<{ address: string; mailboxUid: string }>(AddressModel).findOne({ address: a });
    const box = rec ? await ctx.store.repo<Record<string, unknown>>(MailboxModel).get(rec.mailboxUid) : null;
    if (!box || !allows(await grantsFor(ctx.store, mailboxes, box), subjects, 'sendAs')) {
      throw new ApiError(
        'api-102',
        `you may not send as ${a}: use an address of your mailbox or of a mailbox shared with you with the sendAs right`,
      );
    }
  }
}
