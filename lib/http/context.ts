import type { Request } from 'express';
import { requireSignedIn } from '../auth/index.js';
import type { Ctx, Deps } from '../resources/define.js';

/** The service context of a signed-in request (401 api-100 without a principal). */
export function ctxOf(req: Request, deps: Deps): Ctx {
  return {
    ...deps,
    log: req.log ?? deps.log,
    principal: requireSignedIn(req.principal),
    ip: req.ip ?? req.socket.remoteAddress ?? '',
    requestId: req.requestId ?? '',
  };
}
