import { z } from 'zod';
import * as x509 from '@peculiar/x509';
import { requireTrusted } from '../auth/index.js';
import { writeAudit } from '../audit/index.js';
import type { Config } from '../config/index.js';
import { ApiError, invalid, notFound, parseOrThrow } from '../errors/index.js';
import { emailsOf, fingerprintOf, parseCsr, spkiOf } from '../pki/index.js';
import { readableMailboxes } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { defineModel, type Row } from '../storage/index.js';
import { KeyVaultModel, type KeyVault } from './models.js';
import { findVault, loadMailbox } from './vault-service.js';

// Spec: Signing-certificate enrolment. Backends manual (application default), rfc8823 (ACME for
// S/MIME) and auto. A request is tied to the vault's signing key and master key generation; a
// certificate is installed only while both still hold (a rekey supersedes the request).

export const ENROLLMENT_STATES = [
  'requested',
  'challenge-pending',
  'challenge-answered',
  'validating',
  'issued',
  'installed',
  'superseded',
  'rejected',
  'failed',
] as const;
export type EnrollmentState = (typeof ENROLLMENT_STATES)[number];

/** Moves a request may make (the driver job and the administrators go through this table). */
export const TRANSITIONS: Record<EnrollmentState, readonly EnrollmentState[]> = {
  requested: ['challenge-pending', 'issued', 'rejected', 'failed', 'superseded'],
  'challenge-pending': ['challenge-answered', 'failed', 'superseded'],
  'challenge-answered': ['validating', 'failed', 'superseded'],
  validating: ['issued', 'failed', 'superseded'],
  issued: ['installed', 'superseded'],
  installed: [],
  superseded: [],
  rejected: [],
  failed: [],
};

export const signingEnrollmentFields = {
  mailboxUid: z.string(),
  address: z.string(),
  backend: z.enum(['manual', 'rfc8823']),
  state: z.enum(ENROLLMENT_STATES),
  csr: z.string(),
  signingPublicKey: z.string(),
  masterKeyGeneration: z.number().int(),
  certificate: z.string().nullable().optional(),
  fingerprint: z.string().nullable().optional(),
  /** rfc8823: order and challenge URLs, token-part1; never the key authorization. */
  acme: z.record(z.string(), z.unknown()).nullable().optional(),
  reason: z.string().nullable().optional(),
  completedBy: z.string().nullable().optional(),
};
export const SigningEnrollmentModel = defineModel({
  name: 'signing_enrollment',
  table: 'signing_enrollments',
  fields: signingEnrollmentFields,
  lease: true,
  indexes: [{ fields: ['mailboxUid'] }, { fields: ['state'] }],
});
export type SigningEnrollment = z.infer<z.ZodObject<typeof signingEnrollmentFields>>;

const repo = (ctx: Pick<Ctx, 'store'>) => ctx.store.repo<SigningEnrollment>(SigningEnrollmentModel);

/** A request as the API answers it: no lease fields. */
export function enrollmentView(rec: Row<SigningEnrollment>): Row<SigningEnrollment> {
  const { claimedBy: _c, leaseUntil: _l, ...rest } = rec as Row<SigningEnrollment> & { claimedBy?: unknown; leaseUntil?: unknown };
  return rest;
}

const TEST_DOMAIN = /(^|\.)(test|example|invalid|localhost|local|internal)$|^example\.(com|net|org)$/;

/** The backend in force for an address: auto is rfc8823 for a real domain, manual for local test domains. */
export function effectiveBackend(config: Config, address?: string): 'manual' | 'rfc8823' {
  const b = config.get('mail:signing:backend');
  if (b !== 'auto') return b;
  const domain = address?.slice(address.lastIndexOf('@') + 1) ?? '';
  return TEST_DOMAIN.test(domain) ? 'manual' : 'rfc8823';
}

export async function moveEnrollment(
  ctx: Pick<Ctx, 'store'>,
  rec: Row<SigningEnrollment>,
  to: EnrollmentState,
  patch: Partial<SigningEnrollment> = {},
): Promise<Row<SigningEnrollment>> {
  if (!TRANSITIONS[rec.state].includes(to)) throw new ApiError('api-120', `a ${rec.state} request cannot become ${to}`);
  return repo(ctx).update(rec.uid, { ...patch, state: to }, { expectedVersion: rec.version });
}

const OPEN: EnrollmentState[] = ['requested', 'challenge-pending', 'challenge-answered', 'validating', 'issued'];

/** The body of a signing-certificate request. */
export const enrolRequest = z.object({ expectedMasterKeyGeneration: z.number().int().min(1), csr: z.string().min(100).max(8192) }).strict();
/** Its outline, the route's check; the values are checked after the mailbox access check. */
export const enrolRequestOutline = z
  .object({
    expectedMasterKeyGeneration: z.number().int().describe('the current generation of the vault'),
    csr: z.string().describe('PKCS#10 (PEM) signed with the vault signing key'),
  })
  .strict();
/** The body of a request completed by hand. */
export const completeRequest = z.object({ certificate: z.string().min(100).max(16_384).describe('PEM') }).strict();
/** The body of a rejection. */
export const rejectRequest = z.object({ reason: z.string().trim().min(1).max(500) }).strict();

/** The owner asks for a signing certificate for the vault's signing key (CSR signed by it). */
export async function requestSigningCertificate(
  ctx: Ctx,
  mailboxUid: string,
  input: z.infer<typeof enrolRequestOutline>,
): Promise<Row<SigningEnrollment>> {
  const mailbox = await loadMailbox(ctx, mailboxUid, 'owner');
  const body = parseOrThrow(enrolRequest, input, 'invalid signing-certificate request');
  const v = await findVault(ctx, mailboxUid);
  if (!v?.enrolled) throw new ApiError('api-120', 'enrol the key vault first');
  if (v.masterKeyGeneration !== body.expectedMasterKeyGeneration)
    throw new ApiError('api-108', `stale expectedMasterKeyGeneration: the vault is at generation ${v.masterKeyGeneration}`);
  const csr = await parseCsr(body.csr, 'csr');
  if (spkiOf(csr).toString('base64') !== v.signingPublicKey)
    throw invalid("the request must be for the vault's signing key", [
      { path: 'csr', message: 'public key differs from signingPublicKey' },
    ]);
  for (const open of await repo(ctx).list({ filter: { mailboxUid, state: { $in: OPEN } }, limit: 100 })) {
    await moveEnrollment(ctx, open, 'superseded', { reason: 'a newer request was made' });
  }
  const address = mailbox.address as string;
  const rec = await repo(ctx).create({
    mailboxUid,
    address,
    backend: effectiveBackend(ctx.config, address),
    state: 'requested',
    csr: csr.toString('pem'),
    signingPublicKey: v.signingPublicKey!,
    masterKeyGeneration: v.masterKeyGeneration,
    certificate: null,
    fingerprint: null,
    acme: null,
    reason: null,
    completedBy: null,
  });
  ctx.events.publish([mailboxUid], { type: 'signing-enrollment', action: 'create', data: { uid: rec.uid, state: rec.state } });
  return rec;
}

/** Checks an issued signing certificate against the request. */
function checkSigningCert(pem: string, rec: SigningEnrollment): x509.X509Certificate {
  let cert: x509.X509Certificate;
  try {
    cert = new x509.X509Certificate(pem);
    // key and extensions are decoded on first use: malformed ones are refused here, not thrown below
    void cert.publicKey;
    void cert.extensions;
  } catch {
    throw invalid('certificate is not an X.509 certificate (PEM)', [{ path: 'certificate', message: 'PEM expected' }]);
  }
  if (spkiOf(cert).toString('base64') !== rec.signingPublicKey)
    throw invalid('the certificate is for another key', [{ path: 'certificate', message: 'public key differs from the request' }]);
  if (!emailsOf(cert).includes(rec.address))
    throw invalid('the certificate does not name the mailbox address', [
      { path: 'certificate', message: `rfc822Name ${rec.address} missing` },
    ]);
  if (cert.notAfter < new Date()) throw invalid('the certificate has expired', [{ path: 'certificate', message: 'expired' }]);
  return cert;
}

/**
 * Installs an issued certificate into the vault unless the vault was rekeyed meanwhile (then the
 * request is superseded). Used by the manual path and the rfc8823 driver.
 */
export async function installCertificate(
  ctx: Pick<Ctx, 'store' | 'events'>,
  rec: Row<SigningEnrollment>,
  pem: string,
  completedBy: string | null,
): Promise<Row<SigningEnrollment>> {
  const cert = checkSigningCert(pem, rec);
  return ctx.store.transaction(async (tx) => {
    const v = await tx.repo<KeyVault>(KeyVaultModel).findOne({ mailboxUid: rec.mailboxUid });
    const issued =
      rec.state === 'issued'
        ? rec
        : await moveEnrollment({ store: tx }, rec, 'issued', {
            certificate: cert.toString('pem') + '\n',
            fingerprint: fingerprintOf(cert),
            completedBy,
          });
    if (!v || v.masterKeyGeneration !== rec.masterKeyGeneration || v.signingPublicKey !== rec.signingPublicKey) {
      return moveEnrollment({ store: tx }, issued, 'superseded', { reason: 'the vault was rekeyed before the certificate arrived' });
    }
    await tx
      .repo<KeyVault>(KeyVaultModel)
      .update(v.uid, { signingCertificate: cert.toString('pem') + '\n' }, { expectedVersion: v.version });
    const done = await moveEnrollment({ store: tx }, issued, 'installed');
    ctx.events.publish([rec.mailboxUid], { type: 'signing-enrollment', action: 'update', data: { uid: rec.uid, state: done.state } });
    return done;
  });
}

/** GET /api/system/signing-enrollment: the backend in force and the caller's requests. */
export async function enrollmentStatus(
  ctx: Ctx,
): Promise<{ backend: 'manual' | 'rfc8823'; configured: 'manual' | 'rfc8823' | 'auto'; requests: Array<Row<SigningEnrollment>> }> {
  const mailboxes = await readableMailboxes(ctx);
  const requests = mailboxes.length
    ? await repo(ctx).list({ filter: { mailboxUid: { $in: mailboxes } }, limit: 1000, sort: [{ field: 'createdAt', dir: 'desc' }] })
    : [];
  return { backend: effectiveBackend(ctx.config), configured: ctx.config.get('mail:signing:backend'), requests };
}

export async function adminList(ctx: Ctx, state?: EnrollmentState): Promise<Array<Row<SigningEnrollment>>> {
  requireTrusted(ctx.principal, ctx.config, { fresh: true });
  return repo(ctx).list({ filter: state ? { state } : {}, limit: 1000, sort: [{ field: 'createdAt', dir: 'desc' }] });
}

export async function adminComplete(ctx: Ctx, uid: string, certificate: string): Promise<Row<SigningEnrollment>> {
  requireTrusted(ctx.principal, ctx.config, { fresh: true });
  const rec = await repo(ctx).get(uid);
  if (!rec) throw notFound();
  if (!['requested', 'validating', 'challenge-answered', 'challenge-pending'].includes(rec.state))
    throw new ApiError('api-120', `a ${rec.state} request cannot be completed`);
  const base = rec.state === 'requested' ? rec : await repo(ctx).update(rec.uid, { state: 'requested' });
  const done = await installCertificate(ctx, base, certificate, ctx.principal.uid);
  await writeAudit(ctx.store, ctx, {
    action: 'signing-enrollments.complete',
    resource: 'signing-enrollments',
    resourceUid: uid,
    details: { mailboxUid: rec.mailboxUid, state: done.state, fingerprint: done.fingerprint ?? null },
  });
  return done;
}

export async function adminReject(ctx: Ctx, uid: string, reason: string): Promise<Row<SigningEnrollment>> {
  requireTrusted(ctx.principal, ctx.config, { fresh: true });
  const rec = await repo(ctx).get(uid);
  if (!rec) throw notFound();
  const done = await moveEnrollment(ctx, rec, 'rejected', { reason, completedBy: ctx.principal.uid });
  await writeAudit(ctx.store, ctx, {
    action: 'signing-enrollments.reject',
    resource: 'signing-enrollments',
    resourceUid: uid,
    details: { mailboxUid: rec.mailboxUid, reason },
  });
  return done;
}
