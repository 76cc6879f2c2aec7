import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ApiError } from './api-error.js';

interface BodyParserError {
  type?: string;
  status?: number;
  expose?: boolean;
  body?: unknown;
  limit?: number;
  length?: number;
  message?: string;
}

/** What is wrong with a body express.json could not take, in words a client can act on. */
function parseFailure(bp: BodyParserError): ApiError {
  if (typeof bp.body === 'string') {
    try {
      JSON.parse(bp.body);
      // Valid JSON, but a bare value: strict JSON bodies are objects or arrays.
      return new ApiError(
        'api-111',
        'The body must be a JSON object, not a bare value; to set one property send {"value": <new value>, "version": <the record\'s version>}',
      );
    } catch {
      /* not JSON at all */
    }
  }
  return new ApiError('api-111', `Malformed request body: not valid JSON${bp.message ? ` (${bp.message.slice(0, 120)})` : ''}`);
}

/** Map whatever a route threw to the spec's error body. Unknown errors become a bare 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const bp = err as BodyParserError;
  if (bp && typeof bp === 'object' && typeof bp.type === 'string') {
    if (bp.type === 'entity.too.large')
      return new ApiError(
        'api-110',
        `Request too large: the body has ${bp.length ?? 'more'} bytes and this route takes at most ${bp.limit ?? 'fewer'} (JSON bodies: body_limit_bytes)`,
      );
    if (bp.type === 'entity.parse.failed') return parseFailure(bp);
    if (bp.type === 'encoding.unsupported' || bp.type === 'charset.unsupported') return new ApiError('api-117');
    if (bp.type === 'request.aborted') return new ApiError('api-111', 'Request aborted');
  }
  // A full disk or quota (blob store, temporary files): temporary, so the MTA's hand-off is retried.
  const errno = (err as NodeJS.ErrnoException | null)?.code;
  if (errno === 'ENOSPC' || errno === 'EDQUOT') return new ApiError('api-113', 'Storage is full; retry later');
  // A path parameter that is not valid percent-encoding (the router's decodeURIComponent failed).
  if (err instanceof URIError) return new ApiError('api-106', 'The path is not valid percent-encoded UTF-8');
  // http-errors from express.static (a missing asset): the same 404 as an unknown route.
  if (bp && typeof bp === 'object' && bp.status === 404 && (bp as { statusCode?: number }).statusCode === 404)
    return new ApiError('api-107');
  return new ApiError('api-199');
}

export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  if (res.locals.timedOut) {
    // request_timeout_ms answered already; this is the handler finishing late.
    req.log?.debug({ err: (err as Error)?.message }, 'error after the request timed out');
    return;
  }
  const apiErr = toApiError(err);
  if (apiErr.code === 'api-199' || (apiErr.status >= 500 && !(err instanceof ApiError))) {
    req.log?.error({ err }, 'unhandled error');
  }
  if (res.headersSent) {
    // Mid-stream: cut the connection so the client sees the answer is incomplete. An answer that
    // is complete already leaves the socket alone (keep-alive may be serving the next request).
    if (!res.writableEnded) res.destroy();
    return;
  }
  if (apiErr.headers) res.set(apiErr.headers);
  res.status(apiErr.status).json(apiErr.toBody());
};

export const notFoundHandler: RequestHandler = (_req, _res, next) => next(new ApiError('api-107', 'No such route'));
