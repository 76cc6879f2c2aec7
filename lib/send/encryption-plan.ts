import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { resolveRecipient, servedDomains, type Resolution } from '../ingest/index.js';
import {
  checkSendPolicy,
  classifyRecipients,
  loadMailbox,
  lookupKey,
  readPolicy,
  refuseDowngrade,
  type EncryptionPolicy,
  type RecipientClass,
} from '../keys/index.js';
import type { MessageRecord } from '../mail/index.js';
import type { Ctx } from '../context/index.js';

// The encryption side of a send (Spec: Encryption policy, Discovered keys): the send path refuses
// what the policy forbids, and the compose view asks beforehand what a send to its recipients would
// need — each recipient's class, the policy's rule for it and the key to encrypt to — from the same
// classes and keys, so the plan it shows is the one the send enforces. Asking pins nothing: a
// federated key is pinned when it is first used (the compose view looks it up at the send).

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1).toLowerCase();

/** A recipient, whether its domain is served here, and what it resolves to when so. */
export interface ResolvedRcpt {
  address: string;
  sameOrg: boolean;
  res: Resolution | null;
}

/** Resolves the recipients in served domains (mailbox, list or unknown); others are left unresolved. */
export async function resolveRecipients(ctx: Ctx, rcpts: string[]): Promise<ResolvedRcpt[]> {
  const domains = await servedDomains(ctx);
  return Promise.all(
    rcpts.map(async (address) => ({
      address,
      sameOrg: domains.has(domainOf(address)),
      res: domains.has(domainOf(address)) ? await resolveRecipient(ctx, address, domains) : null,
    })),
  );
}

const classesOf = (ctx: Ctx, mailboxUid: string, resolved: ResolvedRcpt[]) =>
  classifyRecipients(
    ctx,
    mailboxUid,
    resolved.map((r) => ({ address: r.address, sameOrg: r.sameOrg, localMailboxUid: r.res?.kind === 'mailbox' ? r.res.mailboxUid : null })),
  );

/** Applies the encryption policy and downgrade protection to the recipients; a refusal throws api-121. */
export async function applyEncryptionPolicy(ctx: Ctx, msg: MessageRecord, resolved: ResolvedRcpt[], rcpts: string[]): Promise<void> {
  const encrypted = msg.smime === 'encrypted';
  checkSendPolicy(await readPolicy(ctx), await classesOf(ctx, msg.mailboxUid, resolved), encrypted);
  await refuseDowngrade(ctx, msg.mailboxUid, rcpts, encrypted);
}

const RULES = ['automatic', 'optional', 'prohibited'] as const;
const keyShape = z.object({
  source: z.enum(['local', 'federated']),
  certificate: z.string().describe('PEM'),
  fingerprint: z.string().describe('SHA-256 of the DER, hex'),
  pin: z
    .object({
      uid: z.string(),
      state: z.enum(['pinned', 'conflict']),
      fingerprint: z.string(),
      pendingFingerprint: z.string().nullable(),
      firstUse: z.boolean(),
    })
    .nullable()
    .describe(
      'federated keys: the pin (null until the key is first used: GET keys/lookup at the send pins it); state conflict means a new key waits for the user to accept or reject it',
    ),
  remote: z
    .enum(['found', 'absent', 'unreachable'])
    .nullable()
    .describe("federated keys: whether their server answered now ('absent' or 'unreachable': the pinned key is used)"),
});

export const encryptionPlanAnswer = z.object({
  recipients: z.array(
    z.object({
      address: z.string(),
      class: z.enum(['sameOrg', 'federated', 'external']),
      rule: z.enum(RULES).describe('the encryption policy for this class'),
      kind: z.enum(['mailbox', 'list', 'unknown', 'remote']).describe('what a served address resolves to; remote for other domains'),
      key: keyShape.nullable().describe('the certificate to encrypt to (a pinned key stays in use while its server is silent)'),
      lookup: z.enum(['found', 'none', 'unreachable']),
    }),
  ),
  encryptable: z.boolean().describe('every recipient has a key and no rule prohibits encryption'),
  plaintextAllowed: z.boolean().describe('no rule requires encryption to a recipient with a key, and no recipient has a pinned key'),
});
export type EncryptionPlan = z.infer<typeof encryptionPlanAnswer>;

/** The key of one recipient, or why there is none. */
async function keyOf(ctx: Ctx, mailboxUid: string, address: string): Promise<Pick<EncryptionPlan['recipients'][number], 'key' | 'lookup'>> {
  try {
    const k = await lookupKey(ctx, mailboxUid, address, { peek: true });
    return {
      key: { source: k.source, certificate: k.certificate, fingerprint: k.fingerprint, pin: k.pin, remote: k.remote ?? null },
      lookup: 'found',
    };
  } catch (e) {
    if (e instanceof ApiError && e.code === 'api-113') return { key: null, lookup: 'unreachable' };
    if (e instanceof ApiError && e.status === 404) return { key: null, lookup: 'none' };
    throw e;
  }
}

const ruleOf = (p: EncryptionPolicy, c: RecipientClass) =>
  c === 'sameOrg' ? p.encryptSameOrg : c === 'federated' ? p.encryptFederated : p.encryptExternal;

/** What a send from `mailboxUid` to `addresses` needs: per recipient its class, rule and key; whether it can be encrypted, or sent plain. */
export async function encryptionPlan(ctx: Ctx, mailboxUid: string, addresses: string[]): Promise<EncryptionPlan> {
  await loadMailbox(ctx, mailboxUid, 'read');
  const rcpts = [...new Set(addresses.map((a) => a.toLowerCase()))];
  const resolved = await resolveRecipients(ctx, rcpts);
  const [policy, classes] = await Promise.all([readPolicy(ctx), classesOf(ctx, mailboxUid, resolved)]);
  const recipients = await Promise.all(
    resolved.map(async (r, i) => ({
      address: r.address,
      class: classes[i]!.class,
      rule: ruleOf(policy, classes[i]!.class),
      kind: r.res?.kind ?? ('remote' as const),
      ...(await keyOf(ctx, mailboxUid, r.address)),
    })),
  );
  let plaintextAllowed = true;
  try {
    checkSendPolicy(policy, classes, false);
    await refuseDowngrade(ctx, mailboxUid, rcpts, false);
  } catch (e) {
    if (!(e instanceof ApiError && e.code === 'api-121')) throw e;
    plaintextAllowed = false;
  }
  const encryptable = recipients.length > 0 && recipients.every((r) => r.key && r.rule !== 'prohibited');
  return { recipients, encryptable, plaintextAllowed };
}
