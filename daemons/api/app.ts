import express, { type Express, type Router } from 'express';
import { authenticate } from '../../lib/auth/index.js';
import { basicAuth } from '../../lib/basic-auth/index.js';
import { errorHandler, notFoundHandler } from '../../lib/errors/index.js';
import { cors, OpenApiRegistry, openApiRouter, rejectNul, requestContext, requestTimeout, securityHeaders } from '../../lib/http/index.js';
import { ResourceService, resourceRouter, type ResourceRegistry } from '../../lib/resources/index.js';
import { type Deps } from '../../lib/context/index.js';
import { aclRouter } from '../../lib/resources/index.js';
import { dnsChecklistRouter } from '../../lib/dns/index.js';
import { keysRouter, wellKnownKeysRouter } from '../../lib/keys/index.js';
import { productRegistry } from '../../lib/catalog.js';
import {
  INGEST_STATES,
  IngestEntryModel,
  OutboundHandoffModel,
  ingestAdminRouter,
  ingestRouter,
  autoReplyRouter,
  mailPort,
  recordingOutbound,
} from '../../lib/ingest/index.js';
import { Metrics, adminRouter, statusRouter } from '../../lib/admin/index.js';
import { pimRouter } from '../../lib/pim/index.js';
import { escrowRouter } from '../../lib/escrow/index.js';
import { composeRouter, directoryRouter, mailboxOwnersRouter, messageRouter, searchRouter, threadRouter } from '../../lib/mail/index.js';
import { OUTBOUND_STATES, OutboundJobModel, sendRouter } from '../../lib/send/index.js';
import { PRODUCT } from '../../lib/version.js';
import { createRateLimits, trustProxySetting, type RateLimits } from '../../lib/http/index.js';
import { serverInfoRouter, sessionRouter } from '../../lib/http/index.js';
import { PluginHost, documentOtherRoutes, pluginApiRouters, productPlugins, type PluginManifest } from '../../lib/plugins/index.js';
import { forwardProtocolRequests } from './front-door.js';
import { except, series } from '../../lib/http/index.js';
import { impersonationRouter, lifecycleRouter } from '../../lib/lifecycle/index.js';
import { pagesRouter } from '../../lib/web/index.js';
import { isPeerDaemon, notReadyPhrase, PEER_DAEMONS, peerReadiness } from '../../lib/setup/doctor/index.js';

export interface ApiApp {
  app: Express;
  openapi: OpenApiRegistry;
  /** Rate-limit counters (a Redis connection when redis:url is set): close with the daemon. */
  limits: RateLimits;
  registry: ResourceRegistry;
  /** The plugins: listed at /api/system/plugins; their /api/mail/<plugin> routes served here. */
  plugins: PluginHost;
}

/** Routes whose body is an uploaded file, read raw by the route itself. */
const UPLOAD_PATH = /^\/api\/mail\/compose\/[^/?]+\/attachments(\?|$)/;

/** The api daemon's metrics: the request counters and the queue depths by state. */
function apiMetrics(deps: Deps): Metrics {
  return new Metrics(
    deps,
    [
      {
        name: 'svcmail_ingest_entries',
        help: 'Ingest queue entries by state (queued is the depth; delivered, junk, quarantined are outcomes)',
        model: IngestEntryModel,
        field: 'state',
        states: INGEST_STATES,
      },
      {
        name: 'svcmail_outbound_handoffs',
        help: 'Mail the service originates (reports, auto-replies, list relays) by state',
        model: OutboundHandoffModel,
        field: 'state',
        states: ['queued', 'sent', 'failed'],
      },
      {
        name: 'svcmail_outbound_jobs',
        help: 'Outbound send jobs (Outbox) by state (queued and handing are the depth; sent, failed, review are outcomes)',
        model: OutboundJobModel,
        field: 'state',
        states: OUTBOUND_STATES,
      },
    ],
    { daemon: 'api' },
  );
}

/** The api daemon's Express app, built from its dependencies so tests can build one in-process. */
export function buildApiApp(deps: Deps, registry: ResourceRegistry = productRegistry(), opts: { plugins?: PluginManifest[] } = {}): ApiApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // answers are Cache-Control: no-store; hashing every body buys nothing
  // Spec: client addresses come from X-Forwarded-For only through trusted_proxies.
  app.set('trust proxy', trustProxySetting(deps.config));
  app.set('query parser', 'simple');
  const openapi = new OpenApiRegistry();

  const metrics = apiMetrics(deps);
  // Without nginx the protocol paths go on to the protocols daemon, body unread (Architecture: Supervision).
  // What every request passes through first, as one layer (lib/http/compose.ts, series).
  app.use(
    series([
      // First, so the forwarder's own answers (502 api-122 when the protocols daemon is down) carry
      // them too; a forwarded answer's headers from the protocols daemon replace these.
      securityHeaders(deps.config),
      forwardProtocolRequests(deps.config.get('listen:protocols'), deps.log),
      metrics.middleware(),
      requestContext(deps.log),
      cors(deps.config.get('cors:origins')),
      requestTimeout(deps.config.get('request_timeout_ms')), // a hanging datastore answers 503 api-113, not never
    ]),
  );

  // Readiness (Spec: GET /api/status): public, before the body parser, the sign-in and the rate limits.
  // The daemons beside the api are probed as svcmail doctor and svcmail start probe them.
  const peers = {
    names: PEER_DAEMONS,
    probe: (required: string[]) => peerReadiness(deps.config, deps.store, required.filter(isPeerDaemon)),
    notReadyPhrase,
  };
  app.use(statusRouter(deps, openapi, peers));

  // The rate limits and failed-attempt counters (one Redis connection with redis:url, shared by every copy).
  const limits = createRateLimits(deps.config, deps.log);
  // Spec: Internal mail hand-off. Before the JSON parser and the JWT middleware: raw body, ingest-secret
  // guard (wrong secrets counted in limits.failures('ingest'), so every api copy counts together).
  const mailData = mailPort(deps);
  const ingestDeps = { ...deps, port: mailData, outbound: recordingOutbound(deps, mailData) };
  app.use(ingestRouter(ingestDeps, openapi, { failures: limits.failures('ingest') }));

  app.use(
    series([
      // An uploaded file is the body as it came, whatever its type (a .json attachment too): its route reads it raw.
      express.json({
        limit: deps.config.get('body_limit_bytes'),
        type: (req) =>
          !UPLOAD_PATH.test(req.url ?? '') && /^application\/(json|[^;]+\+json)\s*(;|$)/i.test(String(req.headers['content-type'] ?? '')),
      }),
      rejectNul,
    ]),
  );
  // The pages and their assets are public shells (no user data): before sign-in, so an expired
  // cookie still gets the page that sends the user to sign in; counted as anonymous callers.
  app.use(except(['/api/', '/internal/'], pagesRouter(deps, openapi, limits.general)));
  // Spec: Limits. A failed sign-in (bad token, rejected Basic) is counted before it is answered;
  // a caller that passes is counted once, by limits.general.
  app.use(
    series([
      limits.countingFailures(basicAuth(deps.config, { ...deps, failures: limits.failures('basic') })), // app passwords on mail:basic_auth:paths only; before authenticate
      limits.countingFailures(authenticate(deps.config)),
      limits.general,
    ]),
  );
  // The feature routers, in order.
  const service = new ResourceService(registry);
  const plugins = new PluginHost(deps, service, opts.plugins ?? productPlugins());
  const routers: Router[] = [
    serverInfoRouter(deps, openapi),
    sessionRouter(deps, openapi),
    // Feature routers go before the generic routes: /occurrences, /export, /import, /matter-search are not ids.
    pimRouter(service, deps, openapi, ingestDeps.outbound),
    messageRouter(service, deps, openapi),
    sendRouter(service, deps, openapi, {
      limiter: limits.perUser('send', deps.config.get('mail:send:rate_limit:window_ms'), deps.config.get('mail:send:rate_limit:max')),
    }),
    searchRouter(service, deps, openapi),
    threadRouter(service, deps, openapi),
    mailboxOwnersRouter(deps, openapi), // before the generic routes: /mailboxes/:id/owners is not a property
    autoReplyRouter(service, deps, openapi), // before the generic routes: /mailboxes/:id/out-of-office is not a property
    composeRouter(service, deps, openapi),
    directoryRouter(deps, openapi),
    escrowRouter(deps, openapi),
    wellKnownKeysRouter(deps, openapi), // public: the general limiter above counts anonymous callers
    keysRouter(deps, openapi), // before the generic routes: /mailboxes/:id/keyvault is not a property
    adminRouter(deps, openapi), // /api/system policies, branding, setup; /api/admin/diagnostics
    lifecycleRouter(service, deps, openapi), // before the generic routes: import upload, /:id/archive, /on-behalf
    impersonationRouter(service, deps, openapi), // /mailboxes/:id/impersonation-sessions is not a property
    ...pluginApiRouters(plugins, deps, openapi), // /api/system/plugins, /api/mail/devices, /api/mail/<plugin>
  ];
  documentOtherRoutes(openapi, plugins.manifests, 'api'); // the protocols daemon's routes: one document lists every plugin route
  routers.push(
    resourceRouter(registry.all(), service, deps, openapi),
    aclRouter(registry, deps, openapi),
    ingestAdminRouter(ingestDeps, openapi),
    dnsChecklistRouter(deps, openapi),
    metrics.router(deps, openapi),
    openApiRouter(openapi, { title: 'svcmail API', version: PRODUCT.version }),
  );
  app.use(...routers);

  app.use(notFoundHandler);
  app.use(errorHandler);
  return { app, openapi, registry, limits, plugins };
}
