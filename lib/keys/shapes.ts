import { z } from 'zod';
import type { Config } from '../config/index.js';
import { RECOVERY_CODE_COUNT } from './client/format.js';

// Request shapes of the key vault routes. The server cannot check ciphertext, so it checks
// everything else: encodings, exact sizes, bindings and KDF strength (Spec: Key vault, Limits).
//
// Each shape comes at two depths. The route checks the outline first (fields, types, nothing
// unknown: 400 api-106 before anything else); the service checks the full shape (encodings, sizes,
// KDF strength) after the mailbox access check, so whatever a stranger sends he gets 404.

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

/**
 * The checks of one depth: the full ones, or only the types (config: null). In the outline a nested
 * object passes unknown fields on to the full check (documented as refused, which that check does):
 * a stranger's body then still answers 404, however its wraps look.
 */
function checksOf(config: Config | null) {
  const full = config !== null;
  return {
    object: <S extends z.ZodRawShape>(shape: S) =>
      (full ? z.strictObject(shape) : z.looseObject(shape).meta({ additionalProperties: false })) as z.ZodObject<S, z.core.$strict>,
    b64: (min: number, max = min) => (full ? b64(min, max) : z.string()),
    b64url: (min: number, max: number) => (full ? b64url(min, max) : z.string()),
    int: (min: number, max: number) => (full ? z.number().int().min(min).max(max) : z.number().int()),
    text: (min: number, max: number) => (full ? z.string().min(min).max(max) : z.string()),
    count: <T extends z.ZodType>(a: z.ZodArray<T>, n: number, message: string) => (full ? a.length(n, message) : a),
    list: <T extends z.ZodType>(a: z.ZodArray<T>, min: number, max: number) => (full ? a.min(min).max(max) : a),
    minMemoryKiB: full ? config.get('mail:keys:argon2:min_memory_kib') : 0,
    minIterations: full ? config.get('mail:keys:argon2:min_iterations') : 0,
  };
}
type Checks = ReturnType<typeof checksOf>;

/** AES-256-GCM output: a 12-byte IV and ciphertext with its 16-byte tag. */
const gcm = (c: Checks, plainMin: number, plainMax = plainMin) => ({
  iv: c.b64(12).describe('base64, 12 bytes'),
  ciphertext: c.b64(plainMin + 16, plainMax + 16).describe(`base64, ${plainMin + 16} to ${plainMax + 16} bytes (with the tag)`),
});

/** A sealed P-256 private key (PKCS#8 is 67 to 138 bytes). */
const sealedKey = (c: Checks) => c.object(gcm(c, 60, 200));
/** A wrapped 32-byte master key. */
const wrappedMaster = (c: Checks) => ({
  iv: c.b64(12).describe('base64, 12 bytes'),
  ciphertext: c.b64(48).describe('base64, 48 bytes (32-byte master key + tag)'),
});

function wrapUnion(c: Checks) {
  const mailboxUid = c.text(1, 100);
  return z
    .discriminatedUnion('method', [
      c.object({
        method: z.literal('password'),
        mailboxUid,
        ...wrappedMaster(c),
        kdf: c.object({
          name: z.literal('argon2id'),
          salt: c.b64(16, 64).describe('base64, 16-64 bytes'),
          memoryKiB: c.int(c.minMemoryKiB, 4_194_304).describe('>= mail:keys:argon2:min_memory_kib'),
          iterations: c.int(c.minIterations, 64).describe('>= mail:keys:argon2:min_iterations'),
          parallelism: c.int(1, 16),
        }),
      }),
      c.object({
        method: z.literal('recovery codes'),
        mailboxUid,
        codes: c
          .count(
            z.array(c.object({ salt: c.b64(16, 64), ...wrappedMaster(c) })),
            RECOVERY_CODE_COUNT,
            `exactly ${RECOVERY_CODE_COUNT} recovery codes`,
          )
          .describe(`${RECOVERY_CODE_COUNT} entries, one per 160-bit code: key = HKDF-SHA256(code, salt, "svcmail recovery code")`),
      }),
      c.object({
        method: z.literal('passkey'),
        mailboxUid,
        ...wrappedMaster(c),
        credentialId: c.b64url(16, 1023).describe('base64url'),
        prfSalt: c.b64(32).describe('base64, 32 bytes: the WebAuthn PRF input; key = HKDF-SHA256(prf output, prfSalt, "svcmail passkey")'),
        label: z.string().trim().max(100).optional(),
      }),
      c.object({
        method: z.literal('escrow'),
        mailboxUid,
        scopeUid: c.text(1, 100).describe("must be the mailbox's escrow scope; refused (409 api-120) when the mailbox has none"),
        envelope: c.b64(100, 8192).describe('base64 CMS EnvelopedData (DER) of the master key to the escrow scope certificate'),
      }),
    ])
    .describe(
      'One wrap of the master key, bound to the mailbox (mailboxUid) and the method; the AES-256-GCM additional data is "svcmail-vault-v1|wrap|<mailboxUid>|<method>|<generation>" (a passkey appends "|<credentialId>").',
    );
}

const generation = (c: Checks) => c.int(0, 2 ** 31);

function enrolShape(c: Checks) {
  return z
    .object({
      expectedMasterKeyGeneration: generation(c).describe('0 to enrol; the current generation to rekey'),
      signingPublicKey: c.b64(88, 100).describe('SPKI DER (base64) of the P-256 signing key'),
      encryptionCsr: c
        .text(100, 8192)
        .describe(
          'PKCS#10 (PEM) of the P-256 encryption key, signed with it (proof of possession); the encryption certificate is issued from it in the same request',
        ),
      sealedSigningKey: sealedKey(c).describe(
        'PKCS#8 under the master key, AES-256-GCM, additional data "svcmail-vault-v1|seal|<mailboxUid>|signing|<generation>"',
      ),
      sealedEncryptionKey: sealedKey(c).describe('as sealedSigningKey with "encryption"'),
      wraps: c.list(z.array(wrapUnion(c)), 1, 20).describe('at least one password, recovery codes or passkey wrap'),
    })
    .strict();
}

const addWrapShape = (c: Checks) => z.object({ expectedMasterKeyGeneration: generation(c), wrap: wrapUnion(c) }).strict();

/** One wrap, fully checked. */
export const wrapSchema = (config: Config) => wrapUnion(checksOf(config));
/** The body of an enrolment and of a rekey, fully checked (the service's check). */
export const enrolSchema = (config: Config) => enrolShape(checksOf(config));
/** The body of a wrap addition, fully checked (the service's check). */
export const addWrapSchema = (config: Config) => addWrapShape(checksOf(config));
/** The outline of an enrolment or rekey body (the route's check). */
export const enrolOutline = enrolShape(checksOf(null));
/** The outline of a wrap addition (the route's check). */
export const addWrapOutline = addWrapShape(checksOf(null));

export type EnrolBody = z.infer<typeof enrolOutline>;
export type AddWrapBody = z.infer<typeof addWrapOutline>;

/** The query of a wrap removal (a query: unknown parameters are ignored). */
export const removeWrapQuery = z.object({
  expectedMasterKeyGeneration: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 31)
    .describe('the current generation of the vault'),
});
