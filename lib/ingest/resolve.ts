import { DomainModel } from '../settings/index.js';
import { readMailboxPolicy } from '../settings/index.js';
import { AddressModel } from '../mail/index.js';
import type { Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { domainOf } from './headers.js';
import { DistributionListModel, type DistributionList } from './models.js';

export type Resolution =
  | { kind: 'mailbox'; mailboxUid: string; address: string; tag: string | null }
  | { kind: 'list'; list: Row<DistributionList> }
  | { kind: 'unknown'; reason: 'domain' | 'recipient' };

interface DomainRow {
  name: string;
  enabled: boolean;
  verified: boolean;
  aliases: string[];
}

/** Served domain (or domain alias) → its canonical domain; only enabled, verified domains accept mail. */
export async function servedDomains(deps: Pick<Deps, 'store'>): Promise<Map<string, string>> {
  const rows = await deps.store.repo<DomainRow>(DomainModel).list({ filter: { enabled: true, verified: true }, limit: 10_000 });
  const out = new Map<string, string>();
  for (const d of rows) {
    out.set(d.name, d.name);
    for (const a of d.aliases ?? []) out.set(a, d.name);
  }
  return out;
}

type MailboxAddress = { mailboxUid: string; address: string };
/** Mailbox addresses (primary and aliases) already looked up, by address: what resolveRecipient finds first. */
export type KnownAddresses = Map<string, MailboxAddress>;

async function mailboxOf(deps: Pick<Deps, 'store'>, candidates: string[]): Promise<MailboxAddress | null> {
  const row = await deps.store.repo<MailboxAddress>(AddressModel).findOne({ address: { $in: candidates } });
  return row ? { mailboxUid: row.mailboxUid, address: row.address } : null;
}

/** The addresses a recipient is found under first: itself, and its local part in the canonical domain of a domain alias. */
function candidatesOf(addr: string, canonical: string): string[] {
  return [...new Set([addr, `${addr.slice(0, addr.lastIndexOf('@'))}@${canonical}`])];
}

/**
 * The first step of resolveRecipient (primary address or alias) for several recipients in one
 * query: a hand-off resolves all its recipients with one read instead of one each.
 */
export async function knownAddresses(
  deps: Pick<Deps, 'store'>,
  addresses: string[],
  domains: Map<string, string>,
): Promise<KnownAddresses> {
  const candidates = new Set<string>();
  for (const a of addresses) {
    const addr = a.trim().toLowerCase();
    const canonical = addr.lastIndexOf('@') > 0 ? domains.get(domainOf(addr)) : undefined;
    if (canonical) for (const c of candidatesOf(addr, canonical)) candidates.add(c);
  }
  if (!candidates.size) return new Map();
  const rows = await deps.store
    .repo<MailboxAddress>(AddressModel)
    .list({ filter: { address: { $in: [...candidates] } }, limit: candidates.size });
  return new Map(rows.map((r) => [r.address, { mailboxUid: r.mailboxUid, address: r.address }]));
}

/**
 * Spec: Recipient resolution order — primary address, alias (also through domain aliases),
 * distribution list, plus-addressing (mailboxes only, when mail:plus_addressing:enabled).
 */
export async function resolveRecipient(
  deps: Pick<Deps, 'store' | 'config'>,
  address: string,
  domains?: Map<string, string>,
  known?: KnownAddresses,
): Promise<Resolution> {
  const addr = address.trim().toLowerCase();
  const at = addr.lastIndexOf('@');
  if (at < 1) return { kind: 'unknown', reason: 'recipient' };
  const served = domains ?? (await servedDomains(deps));
  const domain = domainOf(addr);
  const canonical = served.get(domain);
  if (!canonical) return { kind: 'unknown', reason: 'domain' };
  const local = addr.slice(0, at);
  const candidates = candidatesOf(addr, canonical);
  // known: looked up together with the other recipients (knownAddresses), the recipient itself before the canonical form.
  const box = known ? (candidates.map((c) => known.get(c)).find(Boolean) ?? null) : await mailboxOf(deps, candidates);
  if (box) return { kind: 'mailbox', ...box, tag: null };
  const list = await deps.store.repo<DistributionList>(DistributionListModel).findOne({ address: { $in: candidates } });
  if (list) return { kind: 'list', list };
  const plus = local.indexOf('+');
  // The setting and the deployment's mailbox policy must both allow it (read only for a tagged address).
  if (plus > 0 && deps.config.get('mail:plus_addressing:enabled') && (await readMailboxPolicy(deps)).plusAddressing) {
    const base = local.slice(0, plus);
    const tagged = await mailboxOf(deps, [...new Set([`${base}@${domain}`, `${base}@${canonical}`])]);
    if (tagged) return { kind: 'mailbox', ...tagged, tag: local.slice(plus + 1) || null };
  }
  return { kind: 'unknown', reason: 'recipient' };
}

export interface Expansion {
  /** mailboxUid → how the copy got there. */
  mailboxes: Map<string, { recipient: string; tag: string | null; viaList: string | null }>;
  /** External members of lists: relayed at once. */
  external: Array<{ address: string; viaList: string }>;
  /** Lists that refused the sender (members-only). */
  refusedLists: string[];
  /** Lists cut because of a cycle or the depth limit. */
  cut: string[];
}

export interface ExpandOptions {
  sender: string;
  senderVerified: boolean;
  domains: Map<string, string>;
}

/**
 * Expands one resolved recipient into mailboxes and external addresses. Lists nest up to
 * mail:distribution_lists:max_depth levels; a list already on the path is a cycle and is cut.
 */
export async function expandRecipient(
  deps: Pick<Deps, 'store' | 'config'>,
  recipient: string,
  res: Resolution,
  opts: ExpandOptions,
  into?: Expansion,
): Promise<Expansion> {
  const out: Expansion = into ?? { mailboxes: new Map(), external: [], refusedLists: [], cut: [] };
  const maxDepth = deps.config.get('mail:distribution_lists:max_depth');
  // The shallowest level each list was expanded at: a list met again higher up is expanded again,
  // since members it could not reach from deeper down may be within max_depth from there.
  const expandedAt = new Map<string, number>();
  const refused = new Set<string>();
  const walk = async (r: Resolution, rcpt: string, depth: number, viaList: string | null, path: Set<string>): Promise<void> => {
    if (r.kind === 'mailbox') {
      if (!out.mailboxes.has(r.mailboxUid)) out.mailboxes.set(r.mailboxUid, { recipient: rcpt, tag: r.tag, viaList });
      return;
    }
    if (r.kind !== 'list') return;
    const list = r.list;
    if (path.has(list.uid) || depth > maxDepth) {
      out.cut.push(list.address);
      return;
    }
    if ((expandedAt.get(list.uid) ?? Infinity) <= depth) return; // reached again, no higher up: members already added
    expandedAt.set(list.uid, depth);
    // Spec: members-only lists need a verified sender; with no trusted authserv-id they drop everything.
    if (list.membersOnly && !(opts.senderVerified && list.members.includes(opts.sender))) {
      if (!refused.has(list.uid)) out.refusedLists.push(list.address);
      refused.add(list.uid);
      return;
    }
    const next = new Set(path).add(list.uid);
    for (const member of list.members) {
      const m = await resolveRecipient(deps, member, opts.domains);
      if (m.kind === 'unknown') {
        if (m.reason === 'domain' && list.allowExternalMembers) {
          if (!out.external.some((e) => e.address === member)) out.external.push({ address: member, viaList: list.address });
        }
        continue;
      }
      await walk(m, rcpt, depth + 1, viaList ?? list.address, next);
    }
  };
  await walk(res, recipient, 1, null, new Set());
  return out;
}
