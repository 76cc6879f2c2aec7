import { setTimeout as sleep } from 'node:timers/promises';
import express, { type RequestHandler, type Router } from 'express';
import { z } from 'zod';
import { domainName } from '../settings/index.js';
import { ApiError, notFound } from '../errors/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { KeyDirectoryModel, type KeyDirectoryEntry } from '../mail/index.js';
import { certificateOf } from './vault-service.js';

// Spec: GET /.well-known/svc/keys/<hash>?domain= — public key lookup for other servers. No
// authentication, rate-limited, and the same response time whether or not the address exists:
// every answer waits until mail:keys:lookup_floor_ms after arrival.

const HASH = /^[ybndrfg8ejkmcpqxot1uwisza345h769]{52}$/;
const query = z.object({ domain: domainName }).strict();

export async function publicKeyFor(
  deps: Pick<Deps, 'store'>,
  hash: string,
  domain: string,
): Promise<{ v: 'SVCv1'; hash: string; domain: string; certificate: string } | null> {
  const entry = await deps.store.repo<KeyDirectoryEntry>(KeyDirectoryModel).findOne({ hash, domain });
  const cert = entry ? await certificateOf(deps, entry.mailboxUid) : null;
  return cert ? { v: 'SVCv1', hash, domain, certificate: cert.certificate } : null;
}

export function wellKnownKeysRouter(deps: Deps, openapi: OpenApiRegistry, limiter?: RequestHandler): Router {
  const router = express.Router();
  const handlers: RequestHandler[] = limiter ? [limiter] : [];
  router.get('/.well-known/svc/keys/:hash', ...handlers, async (req, res, next) => {
    const started = process.hrtime.bigint();
    let status = 200;
    let body: unknown;
    try {
      const hash = String(req.params.hash);
      const q = query.safeParse(req.query);
      if (!HASH.test(hash) || !q.success)
        throw new ApiError('api-106', 'hash must be a z-base-32 SHA-256 (52 characters) and domain a domain name');
      const found = await publicKeyFor(deps, hash, q.data.domain);
      if (!found) throw notFound('No key for this address');
      body = found;
    } catch (e) {
      if (!(e instanceof ApiError)) return next(e);
      status = e.status;
      body = e.toBody();
    }
    const floorNs = BigInt(deps.config.get('mail:keys:lookup_floor_ms')) * 1_000_000n;
    const spent = process.hrtime.bigint() - started;
    if (spent < floorNs) await sleep(Number(floorNs - spent) / 1e6);
    res.status(status).json(body);
  });
  openapi.add('get', '/.well-known/svc/keys/:hash', {
    operationId: 'wellknown_keys',
    summary: 'Public encryption-key lookup for other servers',
    description:
      'hash is the z-base-32 SHA-256 of the lowercased local part; domain the address domain. Answers the encryption certificate of an enrolled mailbox, else 404 — always after the same delay (mail:keys:lookup_floor_ms), so timing does not tell whether the address exists. Rate-limited.',
    tags: ['keys'],
    auth: 'none',
    parameters: [{ name: 'domain', in: 'query', required: true, schema: { type: 'string' } }],
    responses: {
      200: {
        description: 'the certificate',
        schema: {
          type: 'object',
          required: ['v', 'hash', 'domain', 'certificate'],
          properties: {
            v: { const: 'SVCv1' },
            hash: { type: 'string' },
            domain: { type: 'string' },
            certificate: { type: 'string', description: 'PEM' },
          },
        },
      },
      404: { description: 'no key for this address (or no such address)' },
    },
  });
  return router;
}
