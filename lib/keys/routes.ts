import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { ctxOf } from '../http/index.js';
import { jsonSchema, type AuthRequirement, type OpenApiRegistry } from '../http/index.js';
import type { Ctx, Deps } from '../context/index.js';
import { sealedKey } from './shapes.js';
import { z } from 'zod';
import { addWrap, enrollVault, readVault, rekeyVault, removeWrap } from './vault-service.js';
import { lookupKey } from './lookup.js';
import { listDiscovered, resolveConflict } from './discovered.js';
import { readPolicy, writePolicy, policyUpdate } from './policy.js';
import { adminComplete, adminList, adminReject, enrollmentStatus, enrollmentView, requestSigningCertificate } from './enrollment.js';

const MB = '/api/mail/mailboxes/:id';

const wrapDoc = {
  type: 'object',
  description:
    'One wrap of the master key, bound to the mailbox (mailboxUid) and the method; the AES-256-GCM additional data is "svcmail-vault-v1|wrap|<mailboxUid>|<method>|<generation>" (a passkey appends "|<credentialId>").',
  oneOf: [
    {
      title: 'password',
      type: 'object',
      required: ['method', 'mailboxUid', 'kdf', 'iv', 'ciphertext'],
      properties: {
        method: { const: 'password' },
        mailboxUid: { type: 'string' },
        iv: { type: 'string', description: 'base64, 12 bytes' },
        ciphertext: { type: 'string', description: 'base64, 48 bytes (32-byte master key + tag)' },
        kdf: {
          type: 'object',
          properties: {
            name: { const: 'argon2id' },
            salt: { type: 'string', description: 'base64, 16-64 bytes' },
            memoryKiB: { type: 'integer', description: '>= mail:keys:argon2:min_memory_kib' },
            iterations: { type: 'integer' },
            parallelism: { type: 'integer' },
          },
        },
      },
    },
    {
      title: 'recovery codes',
      type: 'object',
      required: ['method', 'mailboxUid', 'codes'],
      properties: {
        method: { const: 'recovery codes' },
        mailboxUid: { type: 'string' },
        codes: {
          type: 'array',
          minItems: 8,
          maxItems: 8,
          description: 'one entry per 160-bit code: key = HKDF-SHA256(code, salt, "svcmail recovery code")',
          items: { type: 'object', properties: { salt: { type: 'string' }, iv: { type: 'string' }, ciphertext: { type: 'string' } } },
        },
      },
    },
    {
      title: 'passkey',
      type: 'object',
      required: ['method', 'mailboxUid', 'credentialId', 'prfSalt', 'iv', 'ciphertext'],
      properties: {
        method: { const: 'passkey' },
        mailboxUid: { type: 'string' },
        credentialId: { type: 'string', description: 'base64url' },
        prfSalt: {
          type: 'string',
          description: 'base64, 32 bytes: the WebAuthn PRF input; key = HKDF-SHA256(prf output, prfSalt, "svcmail passkey")',
        },
        label: { type: 'string' },
        iv: { type: 'string' },
        ciphertext: { type: 'string' },
      },
    },
    {
      title: 'escrow',
      type: 'object',
      required: ['method', 'mailboxUid', 'scopeUid', 'envelope'],
      properties: {
        method: { const: 'escrow' },
        mailboxUid: { type: 'string' },
        scopeUid: { type: 'string', description: "must be the mailbox's escrow scope; refused (409 api-120) when the mailbox has none" },
        envelope: { type: 'string', description: 'base64 CMS EnvelopedData of the master key to the scope certificate' },
      },
    },
  ],
};
const sealedDoc = jsonSchema(sealedKey, 'input');
const enrolDoc = {
  type: 'object',
  required: ['expectedMasterKeyGeneration', 'signingPublicKey', 'encryptionCsr', 'sealedSigningKey', 'sealedEncryptionKey', 'wraps'],
  properties: {
    expectedMasterKeyGeneration: { type: 'integer', description: '0 to enrol; the current generation to rekey' },
    signingPublicKey: { type: 'string', description: 'SPKI DER (base64) of the P-256 signing key' },
    encryptionCsr: {
      type: 'string',
      description:
        'PKCS#10 (PEM) of the P-256 encryption key, signed with it; the encryption certificate is issued from it in the same request',
    },
    sealedSigningKey: {
      ...sealedDoc,
      description: 'PKCS#8 under the master key, AES-256-GCM, additional data "svcmail-vault-v1|seal|<mailboxUid>|signing|<generation>"',
    },
    sealedEncryptionKey: { ...sealedDoc, description: 'as sealedSigningKey with "encryption"' },
    wraps: { type: 'array', items: wrapDoc, minItems: 1, description: 'at least one password, recovery codes or passkey wrap' },
  },
};
const vaultDoc = {
  type: 'object',
  description:
    'The vault: enrolled, masterKeyGeneration, escrowScopeUid, public keys, sealed keys, certificates, caCertificates and wraps (each with id, masterKeyGeneration, createdAt).',
  properties: {
    mailboxUid: { type: 'string' },
    enrolled: { type: 'boolean' },
    masterKeyGeneration: { type: 'integer' },
    escrowScopeUid: { type: ['string', 'null'] },
    encryptionCertificate: { type: 'string' },
    signingCertificate: { type: ['string', 'null'] },
    wraps: { type: 'array', items: wrapDoc },
  },
};
const genConflict = {
  409: { description: 'api-108: stale expectedMasterKeyGeneration (or a concurrent change); api-120: not allowed in this state' },
};

type Handler = (ctx: Ctx, req: Request) => Promise<unknown>;

/** Every key route: vault, lookup, discovered keys, encryption policy, signing enrolment. */
export function keysRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const route = (
    method: 'get' | 'post' | 'put' | 'delete',
    path: string,
    status: number,
    fn: Handler,
    doc: {
      id: string;
      summary: string;
      description?: string;
      auth?: AuthRequirement;
      tags?: string[];
      body?: object;
      response: object;
      params?: Array<{ name: string; in: 'query'; required?: boolean; description?: string; schema: object }>;
      errors?: Record<string, { description: string }>;
    },
  ) => {
    const h: RequestHandler = async (req: Request, res: Response, next) => {
      try {
        res.status(status).json(await fn(ctxOf(req, deps), req));
      } catch (e) {
        next(e);
      }
    };
    router[method](path, h);
    openapi.add(method, path, {
      operationId: doc.id,
      summary: doc.summary,
      description: doc.description,
      tags: doc.tags ?? ['keys'],
      auth: doc.auth ?? 'signed-in',
      parameters: doc.params,
      ...(doc.body ? { requestBody: { schema: doc.body } } : {}),
      responses: {
        [status]: { description: 'ok', schema: doc.response },
        404: { description: 'api-107: no such mailbox, or one the caller cannot see (trusted roles do not count)' },
        ...(doc.errors ?? {}),
      },
    });
  };
  const id = (req: Request) => String(req.params.id);

  route('get', `${MB}/keyvault`, 200, (ctx, req) => readVault(ctx, id(req)), {
    id: 'keyvault_read',
    summary: 'Read the key vault of a mailbox',
    description:
      'Ciphertext, public keys and certificates only. enrolled=false until keys are enrolled. Owners and those the mailbox is shared with; trusted roles do not count.',
    response: vaultDoc,
  });
  route('post', `${MB}/keyvault/enroll`, 201, (ctx, req) => enrollVault(ctx, id(req), req.body), {
    id: 'keyvault_enroll',
    summary: 'Enrol keys: public keys, sealed private keys, first wraps; the encryption certificate is issued in the same request',
    description: 'Owner only. expectedMasterKeyGeneration must be 0; the vault starts at generation 1.',
    body: enrolDoc,
    response: vaultDoc,
    errors: genConflict,
  });
  route('post', `${MB}/keyvault/rekey`, 200, (ctx, req) => rekeyVault(ctx, id(req), req.body), {
    id: 'keyvault_rekey',
    summary:
      'Rekey: new master key (generation + 1), new sealed keys and wraps; a new encryption certificate replaces and revokes the old one',
    description:
      'Owner only. Every wrap is replaced; include the escrow wrap again while the mailbox has an escrow scope. A new signing key clears the signing certificate and supersedes open signing-enrolment requests.',
    body: enrolDoc,
    response: vaultDoc,
    errors: genConflict,
  });
  route('post', `${MB}/keyvault/wraps`, 201, (ctx, req) => addWrap(ctx, id(req), req.body), {
    id: 'keyvault_add_wrap',
    summary: 'Add a wrap of the master key',
    description:
      'Owner only. A password, recovery-codes or escrow wrap replaces the previous one of its method; passkeys add up to mail:keys:max_passkeys (the same credential replaces). The escrow wrap needs an escrow scope (409 api-120 otherwise); its certificate, to wrap the master key to, is in GET /api/mail/mailboxes/:id/escrow.',
    body: {
      type: 'object',
      required: ['expectedMasterKeyGeneration', 'wrap'],
      properties: { expectedMasterKeyGeneration: { type: 'integer' }, wrap: wrapDoc },
    },
    response: vaultDoc,
    errors: genConflict,
  });
  route('delete', `${MB}/keyvault/wraps/:wrapId`, 200, (ctx, req) => removeWrap(ctx, id(req), String(req.params.wrapId), req.query), {
    id: 'keyvault_remove_wrap',
    summary: 'Remove a wrap',
    description: 'Owner only. The last password, recovery-codes or passkey wrap cannot be removed (409 api-120).',
    params: [{ name: 'expectedMasterKeyGeneration', in: 'query', required: true, schema: { type: 'integer' } }],
    response: vaultDoc,
    errors: genConflict,
  });

  route('get', `${MB}/keys/lookup`, 200, (ctx, req) => lookupKey(ctx, id(req), req.query.addr), {
    id: 'keys_lookup',
    summary: "A recipient's encryption certificate",
    description:
      'Local records for served domains; otherwise the _svc.<domain> TXT record names the other server, whose /.well-known/svc/keys route is asked and whose answer is checked. Federated keys are pinned per mailbox on first use; a different key later waits as a conflict and the pinned one is answered; when the other side stops answering a key the pinned one is still answered (remote: absent).',
    params: [{ name: 'addr', in: 'query', required: true, schema: { type: 'string' } }],
    response: {
      type: 'object',
      properties: {
        address: { type: 'string' },
        source: { enum: ['local', 'federated'] },
        certificate: { type: 'string' },
        fingerprint: { type: 'string', description: 'SHA-256 of the DER, hex' },
        pin: { type: ['object', 'null'] },
        remote: { enum: ['found', 'absent', 'unreachable'] },
      },
    },
    errors: { 503: { description: 'api-113: the other server could not be asked and nothing is pinned' } },
  });
  route('get', `${MB}/keys/discovered`, 200, (ctx, req) => listDiscovered(ctx, id(req)), {
    id: 'keys_discovered_list',
    summary: 'Discovered (pinned) keys of the contacts of a mailbox',
    response: { type: 'array', items: { type: 'object' } },
  });
  route('post', `${MB}/keys/discovered/:uid/accept`, 200, (ctx, req) => resolveConflict(ctx, id(req), String(req.params.uid), 'accept'), {
    id: 'keys_discovered_accept',
    summary: 'Accept the conflicting key: it becomes the pinned key',
    response: { type: 'object' },
    errors: { 409: { description: 'api-120: no conflict waiting' } },
  });
  route('post', `${MB}/keys/discovered/:uid/reject`, 200, (ctx, req) => resolveConflict(ctx, id(req), String(req.params.uid), 'reject'), {
    id: 'keys_discovered_reject',
    summary: 'Reject the conflicting key: the pinned key stays and the rejected one is not offered again',
    response: { type: 'object' },
    errors: { 409: { description: 'api-120: no conflict waiting' } },
  });
  route(
    'post',
    `${MB}/keyvault/signing-enrollment`,
    201,
    async (ctx, req) => enrollmentView(await requestSigningCertificate(ctx, id(req), req.body)),
    {
      id: 'keyvault_signing_request',
      summary: 'Ask for a signing certificate for the vault signing key',
      description: 'Owner only. csr: PKCS#10 signed with the vault signing key. Open requests of the mailbox are superseded.',
      body: {
        type: 'object',
        required: ['expectedMasterKeyGeneration', 'csr'],
        properties: { expectedMasterKeyGeneration: { type: 'integer' }, csr: { type: 'string' } },
      },
      response: { type: 'object' },
      errors: genConflict,
    },
  );

  const policyDoc = jsonSchema(
    z.object({
      encryptSameOrg: z.enum(['automatic', 'optional', 'prohibited']),
      encryptFederated: z.enum(['automatic', 'optional', 'prohibited']),
      encryptExternal: z.enum(['automatic', 'optional', 'prohibited']),
      version: z.number().int(),
    }),
  );
  route('get', '/api/system/encryption-policy', 200, (ctx) => readPolicy(ctx), {
    id: 'encryption_policy_read',
    summary: 'The encryption policy of the deployment',
    tags: ['system'],
    response: policyDoc,
  });
  route('put', '/api/system/encryption-policy', 200, (ctx, req) => writePolicy(ctx, req.body), {
    id: 'encryption_policy_write',
    summary: 'Change the encryption policy (audited)',
    description: 'Any subset of the three fields; version is the one read (stale: 409 api-108).',
    tags: ['system'],
    auth: 'trusted-fresh',
    body: jsonSchema(policyUpdate, 'input'),
    response: policyDoc,
    errors: { 409: { description: 'api-108: stale version' } },
  });

  route(
    'get',
    '/api/system/signing-enrollment',
    200,
    async (ctx) => {
      const st = await enrollmentStatus(ctx);
      return { ...st, requests: st.requests.map(enrollmentView) };
    },
    {
      id: 'signing_enrollment_status',
      summary: "The signing-enrolment backend in force and the progress of the caller's requests",
      tags: ['system'],
      response: {
        type: 'object',
        properties: {
          backend: { enum: ['manual', 'rfc8823'] },
          configured: { enum: ['manual', 'rfc8823', 'auto'] },
          requests: { type: 'array', items: { type: 'object' } },
        },
      },
    },
  );
  route(
    'get',
    '/api/admin/signing-enrollments',
    200,
    async (ctx, req) => (await adminList(ctx, req.query.state === undefined ? undefined : String(req.query.state))).map(enrollmentView),
    {
      id: 'admin_signing_enrollments',
      summary: 'Signing-enrolment requests',
      tags: ['admin'],
      auth: 'trusted-fresh',
      params: [{ name: 'state', in: 'query', schema: { type: 'string' } }],
      response: { type: 'array', items: { type: 'object' } },
    },
  );
  route(
    'post',
    '/api/admin/signing-enrollments/:uid/complete',
    200,
    async (ctx, req) => enrollmentView(await adminComplete(ctx, String(req.params.uid), req.body)),
    {
      id: 'admin_signing_enrollment_complete',
      summary: 'Complete a request by hand with the issued certificate (audited)',
      description:
        'The certificate must be for the requested key and name the mailbox address. It is installed into the vault unless the vault was rekeyed meanwhile (state superseded).',
      tags: ['admin'],
      auth: 'trusted-fresh',
      body: { type: 'object', required: ['certificate'], properties: { certificate: { type: 'string', description: 'PEM' } } },
      response: { type: 'object' },
      errors: { 409: { description: 'api-120: the request is not open' } },
    },
  );
  route(
    'post',
    '/api/admin/signing-enrollments/:uid/reject',
    200,
    async (ctx, req) => enrollmentView(await adminReject(ctx, String(req.params.uid), req.body)),
    {
      id: 'admin_signing_enrollment_reject',
      summary: 'Reject a request (audited)',
      tags: ['admin'],
      auth: 'trusted-fresh',
      body: { type: 'object', required: ['reason'], properties: { reason: { type: 'string' } } },
      response: { type: 'object' },
    },
  );
  return router;
}
