import { z } from 'zod';
import { defineSingleton, type SingletonView } from '../settings/index.js';
import { ApiError } from '../errors/index.js';
import type { Ctx } from '../context/index.js';

// Spec: Encryption policy — one record for the deployment; readable by any signed-in user,
// writable by administrators (fresh elevation), every change audited (lib/settings/singleton.ts).

export const POLICY_VALUES = ['automatic', 'optional', 'prohibited'] as const;
const value = z.enum(POLICY_VALUES);
export const encryptionPolicyFields = {
  encryptSameOrg: value.default('optional'),
  encryptFederated: value.default('optional'),
  encryptExternal: value.default('optional'),
};
export const encryptionPolicy = defineSingleton({
  name: 'encryption-policy',
  table: 'encryption_policy',
  fields: encryptionPolicyFields,
  read: 'signed-in',
  summary: 'The encryption policy of the deployment',
});
export const EncryptionPolicyModel = encryptionPolicy.model;
export type EncryptionPolicy = SingletonView<typeof encryptionPolicyFields>;

export const policyUpdate = encryptionPolicy.updateSchema;

export function readPolicy(ctx: Pick<Ctx, 'store'>): Promise<EncryptionPolicy> {
  return encryptionPolicy.read(ctx);
}

export type PolicyUpdate = z.infer<typeof policyUpdate>;

/** A change already checked by policyUpdate (the route's body): trusted role, fresh elevation, audited (lib/settings/singleton.ts). */
export function writePolicy(ctx: Ctx, update: PolicyUpdate): Promise<EncryptionPolicy> {
  return encryptionPolicy.apply(ctx, update);
}

export type RecipientClass = 'sameOrg' | 'federated' | 'external';

/**
 * For the send path (Spec: send refuses plaintext where the policy says automatic and keys exist,
 * and refuses ciphertext where prohibited). Throws api-121 (422, "Refused by the encryption policy")
 * naming the recipient, so a client can tell it from a scanner refusal and offer to encrypt.
 */
export function checkSendPolicy(
  policy: EncryptionPolicy,
  recipients: Array<{ address: string; class: RecipientClass; hasKey: boolean }>,
  encrypted: boolean,
): void {
  const of = (c: RecipientClass) =>
    c === 'sameOrg' ? policy.encryptSameOrg : c === 'federated' ? policy.encryptFederated : policy.encryptExternal;
  for (const r of recipients) {
    const rule = of(r.class);
    if (encrypted && rule === 'prohibited') throw new ApiError('api-121', `the encryption policy prohibits encrypted mail to ${r.address}`);
    if (!encrypted && rule === 'automatic' && r.hasKey)
      throw new ApiError('api-121', `the encryption policy requires encryption to ${r.address}, whose key is known`);
  }
}
