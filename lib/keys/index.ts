// lib/keys: key vault, key lookup (local + federated), discovered keys, encryption policy, signing enrolment.
import { IssuedCertificateModel } from '../pki/index.js';
import type { ModelDef } from '../storage/index.js';
import { SigningEnrollmentModel } from './enrollment.js';
import { KeyDirectoryModel } from '../mail/index.js';
import { DiscoveredKeyModel, KeyVaultModel } from './models.js';
import { EncryptionPolicyModel } from './policy.js';

export { keysRouter } from './routes.js';
export { wellKnownKeysRouter, publicKeyFor } from './well-known.js';
export { readVault, enrollVault, rekeyVault, addWrap, removeWrap, setEscrowScope, certificateOf, loadMailbox } from './vault-service.js';
export { lookupKey, fetchRemoteKey } from './lookup.js';
export { refuseDowngrade, observeKey, pinnedKey } from './discovered.js';
export { readPolicy, writePolicy, checkSendPolicy, type EncryptionPolicy, type RecipientClass } from './policy.js';
export { classifyRecipients, isFederatedDomain, hasLocalKey, clearFederationCache, type SendRecipient } from './recipients.js';
export {
  effectiveBackend,
  installCertificate,
  moveEnrollment,
  TRANSITIONS,
  SigningEnrollmentModel,
  type SigningEnrollment,
  type EnrollmentState,
} from './enrollment.js';
export { discoveryHash, syncDirectory } from '../mail/index.js';
export { AcmeClient, loadAccountKey, emailReplyDigest, acmeClientFromConfig } from './acme.js';
export { consumeAcmeChallenge, driveEnrollments, type ChallengeMail, type ReplyMailer } from './enrollment-driver.js';
export { findSvcRecord, parseSvcRecord } from './dns.js';
export { KeyVaultModel, DiscoveredKeyModel } from './models.js';
export { KeyDirectoryModel } from '../mail/index.js';
export { EncryptionPolicyModel } from './policy.js';

/** Models of this feature (registered in lib/catalog.ts). */
export const KEY_MODELS: ModelDef[] = [
  KeyVaultModel,
  KeyDirectoryModel,
  DiscoveredKeyModel,
  EncryptionPolicyModel,
  SigningEnrollmentModel,
  IssuedCertificateModel,
];
