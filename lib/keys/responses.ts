// The answers of the key routes as they go on the wire (dates are ISO text): the routes declare them,
// and the OpenAPI document is generated from them.
import { isoDate } from '../http/index.js';
import { z } from 'zod';
import { signingEnrollmentFields } from './enrollment.js';
import { discoveredKeyFields } from './models.js';
import { encryptionPolicyFields } from './policy.js';

const recordBase = {
  uid: z.string(),
  version: z.number().int(),
  createdAt: isoDate,
  updatedAt: isoDate,
};

const sealed = z.object({ iv: z.string(), ciphertext: z.string() });

/** What every stored wrap adds to the wrap as it was sent. */
const stored = {
  id: z.string(),
  mailboxUid: z.string(),
  masterKeyGeneration: z.number().int(),
  createdAt: isoDate,
};

/** A stored wrap. Looser than the request shape: a wrap stays valid when the KDF minimums are raised later. */
const storedWrap = z
  .discriminatedUnion('method', [
    z.object({
      method: z.literal('password'),
      ...stored,
      ...sealed.shape,
      kdf: z.object({
        name: z.literal('argon2id'),
        salt: z.string(),
        memoryKiB: z.number().int(),
        iterations: z.number().int(),
        parallelism: z.number().int(),
      }),
    }),
    z.object({
      method: z.literal('recovery codes'),
      ...stored,
      codes: z.array(z.object({ salt: z.string(), ...sealed.shape })),
    }),
    z.object({
      method: z.literal('passkey'),
      ...stored,
      ...sealed.shape,
      credentialId: z.string(),
      prfSalt: z.string(),
      label: z.string().optional(),
    }),
    z.object({ method: z.literal('escrow'), ...stored, scopeUid: z.string(), envelope: z.string() }),
  ])
  .describe('A wrap as sent (see the enrolment body), with its id, masterKeyGeneration and createdAt');

export const vaultView = z
  .object({
    mailboxUid: z.string(),
    enrolled: z.boolean(),
    masterKeyGeneration: z.number().int(),
    escrowScopeUid: z.string().nullable(),
    signingPublicKey: z.string().optional(),
    encryptionPublicKey: z.string().optional(),
    sealedSigningKey: sealed.optional(),
    sealedEncryptionKey: sealed.optional(),
    encryptionCertificate: z.string().optional(),
    signingCertificate: z.string().nullable().optional(),
    caCertificates: z.array(z.string()).optional(),
    wraps: z.array(storedWrap),
    version: z.number().int().optional(),
  })
  .describe(
    'The vault: enrolled, masterKeyGeneration, escrowScopeUid, public keys, sealed keys, certificates, caCertificates and wraps (each with id, masterKeyGeneration, createdAt).',
  );

const pinView = z.object({
  uid: z.string(),
  state: z.enum(['pinned', 'conflict']),
  fingerprint: z.string(),
  pendingFingerprint: z.string().nullable(),
  firstUse: z.boolean().describe('this lookup pinned the key'),
});

export const lookupAnswer = z.object({
  address: z.string(),
  source: z.enum(['local', 'federated']),
  certificate: z.string(),
  fingerprint: z.string().describe('SHA-256 of the DER, hex'),
  pin: pinView.nullable().describe('federated keys: the pin state for this mailbox'),
  remote: z
    .enum(['found', 'absent', 'unreachable'])
    .optional()
    .describe("federated keys: whether the other server still answered the key ('absent' keeps the pinned key)"),
});

export const discoveredKey = z.object({ ...recordBase, ...discoveredKeyFields });

/** A signing-enrolment request (no lease fields). */
export const signingEnrollment = z.object({ ...recordBase, ...signingEnrollmentFields });

export const enrollmentStatusView = z.object({
  backend: z.enum(['manual', 'rfc8823']),
  configured: z.enum(['manual', 'rfc8823', 'auto']),
  requests: z.array(signingEnrollment),
});

export const encryptionPolicyView = z.object({
  ...encryptionPolicyFields,
  version: z.number().int().describe('0 before the first change'),
  updatedAt: isoDate.nullable(),
});

/** The answer of the public key lookup for other servers. */
export const publicKeyAnswer = z.object({
  v: z.literal('SVCv1'),
  hash: z.string(),
  domain: z.string(),
  certificate: z.string().describe('PEM'),
});
