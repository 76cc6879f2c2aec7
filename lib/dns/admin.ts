import type { Ctx } from '../context/index.js';
import { notFound } from '../errors/index.js';
import { DomainModel } from '../settings/index.js';
import { checkItems, type CheckedItem } from './check.js';
import type { ChecklistItem } from './checklist.js';
import { nameservers } from './lookup.js';
import { dnsChecklist } from './source.js';
import { verdicts, type DomainVerdict } from './verdicts.js';
import { verifyCheckedDomains } from './verify.js';

// The DNS checklist for the admin console (Spec: a domain accepts mail once enabled and verified):
// the records `svcmail dns` prints, looked up live on request, and the verification a present MX
// record earns. The caller's trusted role is checked by the route.

/** Each item looked up live with the resolvers of mail:dns:check_nameservers. */
function checkLive(ctx: Ctx, items: readonly ChecklistItem[]): Promise<CheckedItem[]> {
  return checkItems(items, nameservers(ctx.config.get('mail:dns:check_nameservers')));
}

/** The records of the served domains (or of `domain`); with `live`, each looked up and a verdict per domain (nothing is written). */
export async function readChecklist(
  ctx: Ctx,
  domain: string | undefined,
  live: boolean,
): Promise<{ items: ChecklistItem[] | CheckedItem[]; domains?: DomainVerdict[] }> {
  const items = await dnsChecklist(ctx.config, ctx.store, domain);
  if (!live) return { items };
  const checked = await checkLive(ctx, items);
  const rows = await ctx.store.repo<{ name: string; verified: boolean }>(DomainModel).list({ limit: 10_000 });
  return { items: checked, domains: verdicts(checked, new Map(rows.map((r) => [r.name, r.verified]))) };
}

/** Looks the records up live and marks verified each domain whose MX points here (audited as domains.verify). */
export async function verifyDomains(ctx: Ctx, domain: string | undefined): Promise<{ items: CheckedItem[]; domains: DomainVerdict[] }> {
  const items = await dnsChecklist(ctx.config, ctx.store, domain);
  if (domain && !items.length) throw notFound(`${domain} is not a domain served here`);
  const checked = await checkLive(ctx, items);
  return { items: checked, domains: await verifyCheckedDomains(ctx.store, ctx, checked) };
}
