import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { requireSignedIn } from '../auth/index.js';
import { ApiError } from '../errors/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { daemonOf } from './define.js';
import type { PluginHost } from './host.js';
import type { PluginManifest, PluginRequest, PluginResponse, PluginRoute } from './types.js';

export interface PluginRouterOptions {
  /** Which routes this daemon serves: exact protocol paths (protocols) or /api/mail/<plugin> (api). */
  side: 'api' | 'protocols';
  openapi?: OpenApiRegistry;
  /**
   * Authentication for routes that need it, run per route (the api daemon authenticates every
   * request already). Routes with auth none skip it: Autodiscover answers whatever credentials a
   * client sends along.
   */
  authenticate?: RequestHandler[];
  /** The anonymous/signed-in limiter (Spec: Limits, rate limiting), after authentication. */
  limiter?: RequestHandler;
}

/** Adds a route's description to the OpenAPI document, marked with its plugin and daemon. */
export function documentRoute(openapi: OpenApiRegistry, m: PluginManifest, r: PluginRoute): void {
  openapi.add(r.method, r.path, {
    ...r.doc,
    tags: r.doc.tags.length ? r.doc.tags : [`plugins/${m.name}`],
    auth: r.auth,
    daemon: daemonOf(r),
    plugin: m.name,
  });
}

function bodyReader(body: NonNullable<PluginRoute['body']>): RequestHandler {
  const parse =
    body.type === 'raw' ? express.raw({ type: () => true, limit: body.limit }) : express.json({ limit: body.limit, type: () => true });
  return (req, res, next) =>
    parse(req, res, (err?: unknown) => {
      if ((err as { type?: string } | undefined)?.type === 'entity.too.large')
        return next(new ApiError('api-110', `The body is larger than ${body.limit} bytes`));
      next(err);
    });
}

function send(res: Response, out: PluginResponse): void {
  if (out.headers) for (const [k, v] of Object.entries(out.headers)) res.setHeader(k, v);
  res.status(out.status);
  if (out.body === undefined) res.end();
  else if (typeof out.body === 'string' || Buffer.isBuffer(out.body)) res.send(out.body);
  else res.json(out.body);
}

const validAnswer = (a: unknown): a is PluginResponse =>
  typeof a === 'object' &&
  a !== null &&
  Number.isInteger((a as PluginResponse).status) &&
  (a as PluginResponse).status >= 100 &&
  (a as PluginResponse).status <= 599;

/**
 * Runs a route handler with the plugin contained (Style 7): a catalogue error is answered as it
 * is; anything else (a throw, a rejected promise, a malformed answer) is logged with the plugin's
 * name and answered with the generic 500 body, and the daemon goes on.
 */
function invoke(host: PluginHost, m: PluginManifest, route: PluginRoute): RequestHandler {
  return async (req: Request, res: Response, next) => {
    const api = host.api(m.name);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const principal = req.principal ?? null;
    const pluginReq: PluginRequest = {
      method: req.method,
      path: req.path,
      params: { ...(req.params as Record<string, string>) },
      query: { ...(req.query as Record<string, string | string[] | undefined>) },
      headers: { ...req.headers },
      body: route.body ? req.body : undefined,
      ip: req.ip ?? req.socket.remoteAddress ?? '',
      requestId: req.requestId ?? '',
      principal: route.auth === 'none' ? null : principal,
      signal: abort.signal,
    };
    let answer: unknown;
    try {
      const caller = route.auth !== 'none' && principal ? api.as(principal, { ip: pluginReq.ip, requestId: pluginReq.requestId }) : null;
      answer = await route.handle(pluginReq, { host: api, caller });
      if (!validAnswer(answer)) throw new Error('the handler answered something that is not {status, headers?, body?}');
    } catch (e) {
      if (e instanceof ApiError) return next(e);
      api.log.error({ err: e, method: req.method, path: req.path, reqId: req.requestId }, 'plugin route failed; answered 500');
      if (res.headersSent) return res.destroy();
      res.status(500).json(new ApiError('api-199').toBody());
      return;
    }
    if (res.headersSent || abort.signal.aborted) return;
    send(res, answer);
  };
}

/**
 * The plugins' routes for one daemon. Each route first asks whether its plugin is loaded and
 * enabled; when not, it answers 404 api-107 like an unknown route (a disabled plugin's routes
 * answer 404, Spec: /api/system/plugins).
 */
export function pluginRouter(host: PluginHost, opts: PluginRouterOptions): Router {
  const router = express.Router();
  const signedIn: RequestHandler = (req, _res, next) => {
    try {
      requireSignedIn(req.principal);
      next();
    } catch (e) {
      next(e);
    }
  };
  for (const m of host.manifests) {
    // A 404 of its own rather than falling through: Express would answer OPTIONS for another method's route.
    const gate: RequestHandler = (_req, _res, next) => {
      host.active(m.name).then((on) => next(on ? undefined : new ApiError('api-107', 'No such route')), next);
    };
    for (const route of m.routes) {
      if (daemonOf(route) !== opts.side) continue;
      const steps: RequestHandler[] = [];
      if (route.auth !== 'none') steps.push(...(opts.authenticate ?? []));
      if (opts.limiter) steps.push(opts.limiter);
      if (route.auth !== 'none') steps.push(signedIn);
      if (route.body) steps.push(bodyReader(route.body));
      router[route.method](route.path, gate, ...steps, invoke(host, m, route));
      if (opts.openapi) documentRoute(opts.openapi, m, route);
    }
  }
  return router;
}

/** Describes the routes another daemon serves, so one OpenAPI document lists every plugin route (Spec: What the service does, 9). */
export function documentOtherRoutes(openapi: OpenApiRegistry, manifests: readonly PluginManifest[], side: 'api' | 'protocols'): void {
  for (const m of manifests) for (const r of m.routes) if (daemonOf(r) !== side) documentRoute(openapi, m, r);
}
