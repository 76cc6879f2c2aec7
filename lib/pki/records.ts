import { z } from 'zod';
import { defineModel, type Store } from '../storage/index.js';
import type { PkiBackend } from './backend.js';
import type { CertKind, Issued } from './certs.js';

/** Every certificate we issued or installed, and its revocation (Spec: revocation recorded in our own records). */
export const issuedCertFields = {
  serial: z.string(),
  mailboxUid: z.string(),
  backend: z.string(),
  kind: z.enum(['encryption', 'signing']),
  fingerprint: z.string(),
  notAfter: z.date(),
  revokedAt: z.date().nullable().optional(),
  revocationReason: z.string().nullable().optional(),
};

export const IssuedCertificateModel = defineModel({
  name: 'issued_certificate',
  table: 'issued_certificates',
  fields: issuedCertFields,
  indexes: [{ fields: ['fingerprint'], unique: true }, { fields: ['mailboxUid'] }, { fields: ['serial'] }],
});

export type IssuedCertificate = z.infer<z.ZodObject<typeof issuedCertFields>>;

export async function recordIssued(store: Store, backend: string, mailboxUid: string, kind: CertKind, issued: Issued): Promise<void> {
  await store.repo<IssuedCertificate>(IssuedCertificateModel).create({
    serial: issued.serial,
    mailboxUid,
    backend,
    kind,
    fingerprint: issued.fingerprint,
    notAfter: issued.notAfter,
    revokedAt: null,
    revocationReason: null,
  });
}

/** Revokes at the backend (vault) and records it; a certificate we never recorded is left alone. */
export async function revokeCertificate(store: Store, backend: PkiBackend, fingerprint: string, reason: string): Promise<boolean> {
  const repo = store.repo<IssuedCertificate>(IssuedCertificateModel);
  const rec = await repo.findOne({ fingerprint });
  if (!rec || rec.revokedAt) return false;
  if (rec.backend === backend.name) await backend.revoke(rec.serial);
  await repo.update(rec.uid, { revokedAt: new Date(), revocationReason: reason });
  return true;
}

export async function isRevoked(store: Store, fingerprint: string): Promise<boolean> {
  const rec = await store.repo<IssuedCertificate>(IssuedCertificateModel).findOne({ fingerprint });
  return Boolean(rec?.revokedAt);
}
