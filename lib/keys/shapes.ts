import { z } from 'zod';
import type { Config } from '../config/index.js';
import { RECOVERY_CODE_COUNT } from './client/format.js';

// Request shapes of the key vault routes. The server cannot check ciphertext, so it checks
// everything else: encodings, exact sizes, bindings and KDF strength (Spec: Key vault, Limits).

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;
const B64URL = /^[A-Za-z0-9_-]+$/;

const byteLen = (s: string) => Buffer.from(s, 'base64').length;

/** Standard base64 of between min and max bytes. */
export const b64 = (min: number, max = min) =>
  z
    .string()
    .max(Math.ceil(max / 3) * 4 + 4)
    .regex(B64, 'must be base64')
    .refine((s) => s.length % 4 === 0, 'must be padded base64')
    .refine(
      (s) => {
        const n = byteLen(s);
        return n >= min && n <= max;
      },
      min === max ? `must be ${min} bytes` : `must be ${min} to ${max} bytes`,
    );

const b64url = (min: number, max: number) =>
  z
    .string()
    .max(Math.ceil((max * 4) / 3) + 2)
    .regex(B64URL, 'must be base64url without padding')
    .refine((s) => {
      const n = Buffer.from(s, 'base64url').length;
      return n >= min && n <= max;
    }, `must be ${min} to ${max} bytes`);

/** AES-256-GCM output: a 12-byte IV and ciphertext with its 16-byte tag. */
const gcm = (plainMin: number, plainMax = plainMin) => ({ iv: b64(12), ciphertext: b64(plainMin + 16, plainMax + 16) });

/** A sealed P-256 private key (PKCS#8 is 67 to 138 bytes). */
export const sealedKey = z.object(gcm(60, 200)).strict();
/** A wrapped 32-byte master key. */
const wrappedMaster = gcm(32);

export function wrapSchema(config: Config) {
  const minMem = config.get('mail:keys:argon2:min_memory_kib');
  const minIt = config.get('mail:keys:argon2:min_iterations');
  const mailboxUid = z.string().min(1).max(100);
  return z.discriminatedUnion('method', [
    z
      .object({
        method: z.literal('password'),
        mailboxUid,
        ...wrappedMaster,
        kdf: z
          .object({
            name: z.literal('argon2id'),
            salt: b64(16, 64),
            memoryKiB: z.number().int().min(minMem).max(4_194_304),
            iterations: z.number().int().min(minIt).max(64),
            parallelism: z.number().int().min(1).max(16),
          })
          .strict(),
      })
      .strict(),
    z
      .object({
        method: z.literal('recovery codes'),
        mailboxUid,
        codes: z
          .array(z.object({ salt: b64(16, 64), ...wrappedMaster }).strict())
          .length(RECOVERY_CODE_COUNT, `exactly ${RECOVERY_CODE_COUNT} recovery codes`),
      })
      .strict(),
    z
      .object({
        method: z.literal('passkey'),
        mailboxUid,
        ...wrappedMaster,
        credentialId: b64url(16, 1023),
        prfSalt: b64(32),
        label: z.string().trim().max(100).optional(),
      })
      .strict(),
    z
      .object({
        method: z.literal('escrow'),
        mailboxUid,
        scopeUid: z.string().min(1).max(100),
        /** CMS EnvelopedData (DER, base64) of the master key to the escrow scope certificate. */
        envelope: b64(100, 8192),
      })
      .strict(),
  ]);
}

const generation = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31);

const pemOrB64 = z.string().min(100).max(8192);

export function enrolSchema(config: Config) {
  return z
    .object({
      expectedMasterKeyGeneration: generation,
      /** SPKI (DER, base64) of the P-256 signing key. */
      signingPublicKey: b64(88, 100),
      /** PKCS#10 of the P-256 encryption key, signed with it (proof of possession). */
      encryptionCsr: pemOrB64,
      sealedSigningKey: sealedKey,
      sealedEncryptionKey: sealedKey,
      wraps: z.array(wrapSchema(config)).min(1).max(20),
    })
    .strict();
}

export function addWrapSchema(config: Config) {
  return z.object({ expectedMasterKeyGeneration: generation, wrap: wrapSchema(config) }).strict();
}

export const removeWrapQuery = z
  .object({
    expectedMasterKeyGeneration: z.coerce
      .number()
      .int()
      .min(0)
      .max(2 ** 31),
  })
  .strict();
