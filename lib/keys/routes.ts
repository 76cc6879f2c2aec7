import express, { type Router } from 'express';
import { z } from 'zod';
import type { Deps } from '../context/index.js';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import { emailAddress } from '../mail/index.js';
import { listDiscovered, resolveConflict } from './discovered.js';
import {
  adminComplete,
  adminList,
  adminReject,
  completeRequest,
  ENROLLMENT_STATES,
  enrollmentStatus,
  enrollmentView,
  enrolRequestOutline,
  rejectRequest,
  requestSigningCertificate,
} from './enrollment.js';
import { lookupKey } from './lookup.js';
import { policyUpdate, readPolicy, writePolicy } from './policy.js';
import { discoveredKey, encryptionPolicyView, enrollmentStatusView, lookupAnswer, signingEnrollment, vaultView } from './responses.js';
import { addWrapOutline, enrolOutline, removeWrapQuery } from './shapes.js';
import { addWrap, enrollVault, readVault, rekeyVault, removeWrap } from './vault-service.js';

const MB = '/api/mail/mailboxes/:id';
const NO_MAILBOX = 'api-107: no such mailbox, or one the caller cannot see (trusted roles do not count)';
const GEN_CONFLICT = 'api-108: stale expectedMasterKeyGeneration (or a concurrent change); api-120: not allowed in this state';

/** Every key route: vault, lookup, discovered keys, encryption policy, signing enrolment. */
export function keysRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  vaultRoutes(router, deps, openapi);
  discoveryRoutes(router, deps, openapi);
  policyRoutes(router, deps, openapi);
  enrollmentRoutes(router, deps, openapi);
  return router;
}

/** The key vault of a mailbox: read, enrol, rekey, add and remove wraps. */
function vaultRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  const tags = ['keys'];

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${MB}/keyvault`,
    operationId: 'keyvault_read',
    summary: 'Read the key vault of a mailbox',
    description:
      'Ciphertext, public keys and certificates only. enrolled=false until keys are enrolled. Owners and those the mailbox is shared with; trusted roles do not count.',
    tags,
    auth: 'signed-in',
    response: vaultView,
    errors: { 404: NO_MAILBOX },
    handler: (ctx, { params }) => readVault(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${MB}/keyvault/enroll`,
    operationId: 'keyvault_enroll',
    summary: 'Enrol keys: public keys, sealed private keys, first wraps; the encryption certificate is issued in the same request',
    description: 'Owner only. expectedMasterKeyGeneration must be 0; the vault starts at generation 1.',
    tags,
    auth: 'signed-in',
    body: enrolOutline,
    status: 201,
    response: vaultView,
    errors: { 404: NO_MAILBOX, 409: GEN_CONFLICT },
    handler: (ctx, { params, body }) => enrollVault(ctx, params.id, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${MB}/keyvault/rekey`,
    operationId: 'keyvault_rekey',
    summary:
      'Rekey: new master key (generation + 1), new sealed keys and wraps; a new encryption certificate replaces and revokes the old one',
    description:
      'Owner only. Every wrap is replaced; include the escrow wrap again while the mailbox has an escrow scope. A new signing key clears the signing certificate and supersedes open signing-enrolment requests.',
    tags,
    auth: 'signed-in',
    body: enrolOutline,
    response: vaultView,
    errors: { 404: NO_MAILBOX, 409: GEN_CONFLICT },
    handler: (ctx, { params, body }) => rekeyVault(ctx, params.id, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${MB}/keyvault/wraps`,
    operationId: 'keyvault_add_wrap',
    summary: 'Add a wrap of the master key',
    description:
      'Owner only. A password, recovery-codes or escrow wrap replaces the previous one of its method; passkeys add up to mail:keys:max_passkeys (the same credential replaces). The escrow wrap needs an escrow scope (409 api-120 otherwise); its certificate, to wrap the master key to, is in GET /api/mail/mailboxes/:id/escrow.',
    tags,
    auth: 'signed-in',
    body: addWrapOutline,
    status: 201,
    response: vaultView,
    errors: { 404: NO_MAILBOX, 409: GEN_CONFLICT },
    handler: (ctx, { params, body }) => addWrap(ctx, params.id, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'delete',
    path: `${MB}/keyvault/wraps/:wrapId`,
    operationId: 'keyvault_remove_wrap',
    summary: 'Remove a wrap',
    description: 'Owner only. The last password, recovery-codes or passkey wrap cannot be removed (409 api-120).',
    tags,
    auth: 'signed-in',
    query: removeWrapQuery,
    response: vaultView,
    errors: { 404: `${NO_MAILBOX}; or no such wrap`, 409: GEN_CONFLICT },
    handler: (ctx, { params, query }) => removeWrap(ctx, params.id, params.wrapId, query.expectedMasterKeyGeneration),
  });
}

/** Key lookup and the discovered (pinned) keys of a mailbox's contacts. */
function discoveryRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  const tags = ['keys'];

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${MB}/keys/lookup`,
    operationId: 'keys_lookup',
    summary: "A recipient's encryption certificate",
    description:
      'Local records for served domains; otherwise the _svc.<domain> TXT record names the other server, whose /.well-known/svc/keys route is asked and whose answer is checked. Federated keys are pinned per mailbox on first use; a different key later waits as a conflict and the pinned one is answered; when the other side stops answering a key the pinned one is still answered (remote: absent).',
    tags,
    auth: 'signed-in',
    query: z.object({ addr: emailAddress.describe('the recipient address') }),
    response: lookupAnswer,
    errors: {
      404: `${NO_MAILBOX}; or no key for the address`,
      503: 'api-113: the other server could not be asked and nothing is pinned',
    },
    handler: (ctx, { params, query }) => lookupKey(ctx, params.id, query.addr),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${MB}/keys/discovered`,
    operationId: 'keys_discovered_list',
    summary: 'Discovered (pinned) keys of the contacts of a mailbox',
    tags,
    auth: 'signed-in',
    response: z.array(discoveredKey),
    errors: { 404: NO_MAILBOX },
    handler: (ctx, { params }) => listDiscovered(ctx, params.id),
  });

  for (const [decision, summary] of [
    ['accept', 'Accept the conflicting key: it becomes the pinned key'],
    ['reject', 'Reject the conflicting key: the pinned key stays and the rejected one is not offered again'],
  ] as const) {
    defineRoute(router, deps, openapi, {
      method: 'post',
      path: `${MB}/keys/discovered/:uid/${decision}`,
      operationId: `keys_discovered_${decision}`,
      summary,
      tags,
      auth: 'signed-in',
      response: discoveredKey,
      errors: { 404: `${NO_MAILBOX}; or no such key`, 409: 'api-120: no conflict waiting' },
      handler: (ctx, { params }) => resolveConflict(ctx, params.id, params.uid, decision),
    });
  }
}

/** The encryption policy of the deployment: read by any signed-in user, changed by administrators. */
function policyRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/system/encryption-policy',
    operationId: 'encryption_policy_read',
    summary: 'The encryption policy of the deployment',
    tags: ['system'],
    auth: 'signed-in',
    response: encryptionPolicyView,
    handler: (ctx) => readPolicy(ctx),
  });

  defineRoute(router, deps, openapi, {
    method: 'put',
    path: '/api/system/encryption-policy',
    operationId: 'encryption_policy_write',
    summary: 'Change the encryption policy (audited)',
    description: 'Any subset of the three fields; version is the one read (stale: 409 api-108).',
    tags: ['system'],
    auth: 'trusted-fresh',
    body: policyUpdate,
    response: encryptionPolicyView,
    errors: { 409: 'api-108: stale version' },
    handler: (ctx, { body }) => writePolicy(ctx, body),
  });
}

/** Signing-certificate enrolment: the owner's request, its progress, the administrators' hand. */
function enrollmentRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  const admin = ['admin'];
  const noRequest = 'api-107: no such request';

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${MB}/keyvault/signing-enrollment`,
    operationId: 'keyvault_signing_request',
    summary: 'Ask for a signing certificate for the vault signing key',
    description: 'Owner only. csr: PKCS#10 signed with the vault signing key. Open requests of the mailbox are superseded.',
    tags: ['keys'],
    auth: 'signed-in',
    body: enrolRequestOutline,
    status: 201,
    response: signingEnrollment,
    errors: { 404: NO_MAILBOX, 409: GEN_CONFLICT },
    handler: async (ctx, { params, body }) => enrollmentView(await requestSigningCertificate(ctx, params.id, body)),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/system/signing-enrollment',
    operationId: 'signing_enrollment_status',
    summary: "The signing-enrolment backend in force and the progress of the caller's requests",
    tags: ['system'],
    auth: 'signed-in',
    response: enrollmentStatusView,
    handler: async (ctx) => {
      const st = await enrollmentStatus(ctx);
      return { ...st, requests: st.requests.map(enrollmentView) };
    },
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/admin/signing-enrollments',
    operationId: 'admin_signing_enrollments',
    summary: 'Signing-enrolment requests',
    tags: admin,
    auth: 'trusted-fresh',
    query: z.object({ state: z.enum(ENROLLMENT_STATES).optional() }),
    response: z.array(signingEnrollment),
    handler: async (ctx, { query }) => (await adminList(ctx, query.state)).map(enrollmentView),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/admin/signing-enrollments/:uid/complete',
    operationId: 'admin_signing_enrollment_complete',
    summary: 'Complete a request by hand with the issued certificate (audited)',
    description:
      'The certificate must be for the requested key and name the mailbox address. It is installed into the vault unless the vault was rekeyed meanwhile (state superseded).',
    tags: admin,
    auth: 'trusted-fresh',
    body: completeRequest,
    response: signingEnrollment,
    errors: { 404: noRequest, 409: 'api-120: the request is not open' },
    handler: async (ctx, { params, body }) => enrollmentView(await adminComplete(ctx, params.uid, body.certificate)),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/admin/signing-enrollments/:uid/reject',
    operationId: 'admin_signing_enrollment_reject',
    summary: 'Reject a request (audited)',
    tags: admin,
    auth: 'trusted-fresh',
    body: rejectRequest,
    response: signingEnrollment,
    errors: { 404: noRequest, 409: 'api-120: the request cannot be rejected in its state' },
    handler: async (ctx, { params, body }) => enrollmentView(await adminReject(ctx, params.uid, body.reason)),
  });
}
