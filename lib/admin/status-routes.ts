import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { Readiness, type PeerReadiness } from './readiness.js';

const peerState = z.enum(['ready', 'unchecked']);

/**
 * GET /api/status — readiness (lib/admin/readiness.ts), the daemons beside the api probed by
 * `peers`. Public: the api daemon mounts it before the body parser, the sign-in and the rate limits.
 */
export function statusRouter(deps: Deps, openapi: OpenApiRegistry, peers: PeerReadiness): Router {
  const router = express.Router();
  const readiness = new Readiness(deps, peers);

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/status',
    operationId: 'status',
    summary: 'Readiness',
    description: [
      '200 only when the datastore answers and so does each expected daemon the api daemon forwards to or wakes: push (/push/status), protocols (/protocols/status) and the worker (its mail:jobs:wake_address, when set).',
      'A daemon is expected while its newest heartbeat record from this host is not a clean stop (a running or crashed daemon is waited for; one never run on this host, or stopped with svcmail stop, is not), or when `require` names it.',
      'Otherwise 503 api-113: the message names the datastore, or the daemons that do not answer, which `details` lists (path: the daemon).',
    ].join(' '),
    tags: ['system'],
    auth: 'none',
    query: z.object({
      require: z
        .string()
        .optional()
        // Named twice (?require=a&require=b), it is not a list: ignored, as when it is absent.
        .catch(undefined)
        .meta({
          description:
            'Comma-separated daemons to wait for even without a heartbeat on this host (push, protocols, worker; api is accepted and always answers). svcmail start names the daemons it started.',
          example: 'push,protocols,worker',
        }),
    }),
    response: z.object({
      status: z.literal('ok'),
      version: z.string(),
      datastore: z.string(),
      daemons: z
        .object(Object.fromEntries(peers.names.map((d) => [d, peerState])))
        .describe('Each daemon beside the api: ready, or unchecked (not expected, or no address to ask).'),
    }),
    errors: { 503: 'not ready: the datastore or an expected daemon does not answer (api-113)' },
    handler: (_ctx, { query }) => readiness.check(query.require ? query.require.split(',').map((s) => s.trim()) : []),
  });
  return router;
}
