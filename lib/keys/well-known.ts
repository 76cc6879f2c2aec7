import { setTimeout as sleep } from 'node:timers/promises';
import express, { type RequestHandler, type Router } from 'express';
import { z } from 'zod';
import { domainName } from '../settings/index.js';
import { notFound } from '../errors/index.js';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { KeyDirectoryModel, type KeyDirectoryEntry } from '../mail/index.js';
import { publicKeyAnswer } from './responses.js';
import { certificateOf } from './vault-service.js';

// Spec: GET /.well-known/svc/keys/<hash>?domain= — public key lookup for other servers. No
// authentication, rate-limited, and the same response time whether or not the address exists:
// the answer, key or 404, waits until mail:keys:lookup_floor_ms after the lookup began.

const HASH = /^[ybndrfg8ejkmcpqxot1uwisza345h769]{52}$/;

export async function publicKeyFor(
  deps: Pick<Deps, 'store'>,
  hash: string,
  domain: string,
): Promise<{ v: 'SVCv1'; hash: string; domain: string; certificate: string } | null> {
  const entry = await deps.store.repo<KeyDirectoryEntry>(KeyDirectoryModel).findOne({ hash, domain });
  const cert = entry ? await certificateOf(deps, entry.mailboxUid) : null;
  return cert ? { v: 'SVCv1', hash, domain, certificate: cert.certificate } : null;
}

/** Waits out what is left of `floorMs` since `started` (process.hrtime.bigint()). */
async function waitFloor(started: bigint, floorMs: number): Promise<void> {
  const floorNs = BigInt(floorMs) * 1_000_000n;
  const spent = process.hrtime.bigint() - started;
  if (spent < floorNs) await sleep(Number(floorNs - spent) / 1e6);
}

export function wellKnownKeysRouter(deps: Deps, openapi: OpenApiRegistry, limiter?: RequestHandler): Router {
  const router = express.Router();
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/.well-known/svc/keys/:hash',
    operationId: 'wellknown_keys',
    summary: 'Public encryption-key lookup for other servers',
    description:
      'hash is the z-base-32 SHA-256 of the lowercased local part; domain the address domain. Answers the encryption certificate of an enrolled mailbox, else 404 — always after the same delay (mail:keys:lookup_floor_ms), so timing does not tell whether the address exists. Rate-limited.',
    tags: ['keys'],
    auth: 'none',
    before: limiter ? [limiter] : [],
    params: z.object({ hash: z.string().regex(HASH, 'must be a z-base-32 SHA-256 (52 characters)') }),
    query: z.object({ domain: domainName.describe('the domain of the address') }),
    response: publicKeyAnswer,
    errors: { 404: 'no key for this address (or no such address)' },
    handler: async (ctx, { params, query }) => {
      const started = process.hrtime.bigint();
      const found = await publicKeyFor(ctx, params.hash, query.domain);
      await waitFloor(started, ctx.config.get('mail:keys:lookup_floor_ms'));
      if (!found) throw notFound('No key for this address');
      return found;
    },
  });
  return router;
}
