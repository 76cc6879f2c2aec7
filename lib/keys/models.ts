import { z } from 'zod';
import { defineModel } from '../storage/index.js';

/** Spec: Key vault (per mailbox). Only ciphertext, public keys and certificates. */
export const keyVaultFields = {
  mailboxUid: z.string(),
  enrolled: z.boolean().default(false),
  masterKeyGeneration: z.number().int().default(0),
  signingPublicKey: z.string().nullable().optional(),
  encryptionPublicKey: z.string().nullable().optional(),
  sealedSigningKey: z.object({ iv: z.string(), ciphertext: z.string() }).nullable().optional(),
  sealedEncryptionKey: z.object({ iv: z.string(), ciphertext: z.string() }).nullable().optional(),
  encryptionCertificate: z.string().nullable().optional(),
  encryptionFingerprint: z.string().nullable().optional(),
  signingCertificate: z.string().nullable().optional(),
  wraps: z.array(z.record(z.string(), z.unknown())).default([]),
  /** The escrow scope the mailbox is assigned to (the escrow feature sets it); null: no escrow wrap allowed. */
  escrowScopeUid: z.string().nullable().optional(),
};
export const KeyVaultModel = defineModel({
  name: 'key_vault',
  table: 'key_vaults',
  fields: keyVaultFields,
  indexes: [{ fields: ['mailboxUid'], unique: true }],
});
export type KeyVault = z.infer<z.ZodObject<typeof keyVaultFields>>;

/** Spec: Discovered keys. Pinned per mailbox and contact address on first use. */
export const discoveredKeyFields = {
  mailboxUid: z.string(),
  address: z.string(),
  source: z.enum(['local', 'federated']),
  certificate: z.string(),
  fingerprint: z.string(),
  /** pinned; conflict: a different key was found and waits for accept or reject. */
  state: z.enum(['pinned', 'conflict']),
  pendingCertificate: z.string().nullable().optional(),
  pendingFingerprint: z.string().nullable().optional(),
  /** Fingerprints the user rejected for this contact; never offered again. */
  rejected: z.array(z.string()).default([]),
};
export const DiscoveredKeyModel = defineModel({
  name: 'discovered_key',
  table: 'discovered_keys',
  fields: discoveredKeyFields,
  indexes: [{ fields: ['mailboxUid', 'address'], unique: true }],
});
export type DiscoveredKey = z.infer<z.ZodObject<typeof discoveredKeyFields>>;
