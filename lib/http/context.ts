import type { Request } from 'express';
import { requireSignedIn, requireTrusted } from '../auth/index.js';
import type { Ctx, Deps, Principal } from '../context/index.js';
import type { AuthRequirement } from './openapi.js';

/** The call context of a route that needs no signed-in caller: the principal may be missing. */
export type PublicCtx = Omit<Ctx, 'principal'> & { principal: Principal | null };
export type CtxFor<A extends AuthRequirement> = A extends 'none' | 'ingest-secret' ? PublicCtx : Ctx;

/**
 * The call context for a route: the store's per-request session, the request's logger and id, and
 * the principal checked against the route's auth (401 api-100 without a caller, 403 api-103 without a
 * trusted role, 403 api-104 without (fresh) elevation).
 */
export function contextFor(req: Request, deps: Deps, auth: AuthRequirement): Ctx | PublicCtx {
  let principal: Principal | null = req.principal ?? null;
  if (auth === 'trusted' || auth === 'trusted-fresh')
    principal = requireTrusted(principal, deps.config, { fresh: auth === 'trusted-fresh' });
  else if (auth === 'signed-in' || auth === 'basic-or-token') principal = requireSignedIn(principal);
  return {
    ...deps,
    // One request's reads share a consistency point until it writes (Store.session).
    store: deps.store.session ? deps.store.session() : deps.store,
    log: req.log ?? deps.log,
    principal,
    ip: req.ip ?? req.socket.remoteAddress ?? '',
    requestId: req.requestId ?? '',
  };
}
