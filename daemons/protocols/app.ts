import express, { type Express } from 'express';
import { authenticate } from '../../lib/auth/index.js';
import { basicAuth } from '../../lib/basic-auth/index.js';
import { productRegistry } from '../../lib/catalog.js';
import type { Config } from '../../lib/config/index.js';
import { errorHandler, notFoundHandler } from '../../lib/errors/index.js';
import { rejectNul, requestContext, securityHeaders } from '../../lib/http/index.js';
import { OpenApiRegistry } from '../../lib/http/index.js';
import { createRateLimits, type RateLimits } from '../../lib/http/index.js';
import { PluginHost, pluginRouter, productPlugins, type PluginHostOptions, type PluginManifest } from '../../lib/plugins/index.js';
import { ResourceService, type ResourceRegistry } from '../../lib/resources/index.js';
import { type Deps } from '../../lib/context/index.js';
import { PRODUCT } from '../../lib/version.js';

export interface ProtocolsApp {
  app: Express;
  host: PluginHost;
  /** The routes this app serves, as the OpenAPI document of the api daemon lists them. */
  openapi: OpenApiRegistry;
  limits: RateLimits;
}

export interface ProtocolsAppOptions extends PluginHostOptions {
  plugins?: PluginManifest[];
  registry?: ResourceRegistry;
}

/**
 * Who may name the client address in X-Forwarded-For: trusted_proxies, and always loopback — the
 * api daemon's front door and a local nginx both connect from there, and listen:protocols is a
 * loopback address by default, so only local processes can reach this daemon that way. Without
 * it every forwarded client would share the front door's rate-limit bucket.
 */
export function protocolsTrustProxy(config: Config): string[] {
  return ['loopback', ...config.get('trusted_proxies')];
}

/**
 * The protocols daemon's app: the protocol plugins at their exact paths (Spec: Protocol plugin
 * routes use their exact paths without /api). Built from its dependencies so tests can build one
 * in-process; the caller starts and stops the plugin host.
 */
export function buildProtocolsApp(deps: Deps, opts: ProtocolsAppOptions = {}): ProtocolsApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', protocolsTrustProxy(deps.config));
  app.set('query parser', 'simple');
  const host = new PluginHost(deps, new ResourceService(opts.registry ?? productRegistry()), opts.plugins ?? productPlugins(), opts);
  const openapi = new OpenApiRegistry();
  const limits = createRateLimits(deps.config);

  app.use(requestContext(deps.log));
  app.use(securityHeaders(deps.config));
  app.use(rejectNul);
  // Not forwarded by the api front door nor routed by nginx: for svcmail doctor and load balancers on the host.
  app.get('/protocols/status', async (_req, res, next) => {
    try {
      await deps.store.ping();
      const plugins = await Promise.all(
        host.manifests.map(async (m) => ({
          name: m.name,
          version: m.version,
          loaded: host.loaded(m.name),
          enabled: await host.states.enabled(m.name),
        })),
      );
      res.json({ status: 'ok', version: PRODUCT.version, datastore: deps.store.kind, plugins });
    } catch (e) {
      next(e);
    }
  });
  app.use(
    pluginRouter(host, {
      side: 'protocols',
      openapi,
      limiter: limits.general,
      // App passwords on mail:basic_auth:paths, then tokens (Spec: App passwords (Basic)).
      // Failures count toward the address's bucket, and the Basic throttle is shared through Redis when
      // redis:url is set, exactly as in the api daemon.
      authenticate: [
        limits.countingFailures(basicAuth(deps.config, { store: deps.store, log: deps.log, failures: limits.failures('basic') })),
        limits.countingFailures(authenticate(deps.config)),
      ],
    }),
  );
  app.use(notFoundHandler);
  app.use(errorHandler);
  return { app, host, openapi, limits };
}
