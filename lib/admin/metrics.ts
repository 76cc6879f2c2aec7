import express, { type RequestHandler, type Router } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import type { ModelDef } from '../storage/index.js';
import { COUNTERS, readCounter, type CounterName } from '../settings/index.js';
import { isAlive, listHeartbeats } from '../settings/index.js';

/** The path with ids and secrets replaced by :id (UUIDs, long tokens, numbers). */
export function routeTemplate(url: string): string {
  return url
    .split('?')[0]
    .split('/')
    .map((seg) => (isId(seg) ? ':id' : seg))
    .join('/')
    .replace(/(.)\/$/, '$1');
}

/** A long token (24 characters or more: uuids, ids) or a number: a path segment that names one record, not a route. */
function isId(seg: string): boolean {
  // A uuid (36 characters) is a long token too.
  if (seg.length >= 24) return /^[\w-]+$/.test(seg);
  return seg.length > 0 && /^\d+$/.test(seg);
}

/** A count read from the store at scrape time, per value of a state field. */
export interface StateGauge {
  name: string;
  help: string;
  model: ModelDef;
  field: string;
  states: readonly string[];
}

/**
 * Metrics of one process (Spec: GET /api/metrics, trusted role). Request counts and latency per route
 * template come from this process; queue depths, the event counters (lib/settings/counters.ts) and
 * the daemons' heartbeats (push connections) are read from the store at scrape time, so every copy
 * reports the same numbers for them.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly requests: Counter<'method' | 'route' | 'status'>;
  readonly latency: Histogram<'method' | 'route'>;

  constructor(deps: Pick<Deps, 'store'>, gauges: readonly StateGauge[], opts: { daemon: string }) {
    this.registry.setDefaultLabels({ daemon: opts.daemon });
    collectDefaultMetrics({ register: this.registry, prefix: 'svcmail_' });
    this.requests = new Counter({
      name: 'svcmail_http_requests_total',
      help: 'HTTP requests by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.latency = new Histogram({
      name: 'svcmail_http_request_duration_seconds',
      help: 'HTTP request latency by method and route template',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
    for (const g of gauges) {
      new Gauge({
        name: g.name,
        help: g.help,
        labelNames: ['state'],
        registers: [this.registry],
        async collect() {
          const repo = deps.store.repo(g.model);
          const counts = await Promise.all(g.states.map((state) => repo.count({ [g.field]: state })));
          g.states.forEach((state, i) => this.set({ state }, counts[i]));
        },
      });
    }
    for (const [name, def] of Object.entries(COUNTERS) as Array<[CounterName, (typeof COUNTERS)[CounterName]]>) {
      new Counter({
        name,
        help: def.help,
        labelNames: [...def.labels],
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const c of await readCounter(deps.store, name)) this.inc(c.labels, c.value);
        },
      });
    }
    // From the heartbeats: live processes per daemon, and the push daemons' open sockets.
    new Gauge({
      name: 'svcmail_daemon_processes',
      help: 'Processes per daemon whose heartbeat is recent (within three heartbeat periods)',
      labelNames: ['kind'],
      registers: [this.registry],
      async collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const h of await listHeartbeats(deps.store)) counts.set(h.daemon, (counts.get(h.daemon) ?? 0) + (isAlive(h) ? 1 : 0));
        for (const [kind, n] of counts) this.set({ kind }, n);
      },
    });
    new Gauge({
      name: 'svcmail_push_connections',
      help: 'Open /push WebSocket connections per live push daemon process (from its heartbeat)',
      labelNames: ['instance'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const h of await listHeartbeats(deps.store, { daemon: 'push' })) {
          if (isAlive(h)) this.set({ instance: h.instance }, Number(h.details.connections ?? 0));
        }
      },
    });
  }

  /** Counts every request under its route template (never the raw path: ids would explode the label set). */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const stop = this.latency.startTimer();
      res.on('finish', () => {
        const route = req.route ? routeTemplate(req.originalUrl) : 'unmatched';
        stop({ method: req.method, route });
        this.requests.inc({ method: req.method, route, status: String(res.statusCode) });
      });
      next();
    };
  }

  /** GET /api/metrics: this registry in the Prometheus text format (trusted role). */
  router(deps: Deps, openapi: OpenApiRegistry): Router {
    const router = express.Router();
    defineRoute(router, deps, openapi, {
      method: 'get',
      path: '/api/metrics',
      operationId: 'metrics',
      summary:
        'Prometheus metrics: request counts and latency per route (this process), queue depths, deliveries, sends, scan verdicts, live daemon processes, push connections',
      tags: ['system'],
      auth: 'trusted',
      rawResponse: { description: 'Prometheus text format', contentType: 'text/plain' },
      handler: async (_ctx, _input, _req, res) => {
        res.type(this.registry.contentType).send(await this.registry.metrics());
      },
    });
    return router;
  }
}
