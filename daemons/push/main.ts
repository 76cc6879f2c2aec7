import { createServer } from 'node:http';
import { productModels, productRegistry } from '../../lib/catalog.js';
import type { Config } from '../../lib/config/index.js';
import { createEventBus } from '../../lib/events/index.js';
import { createRateLimits } from '../../lib/http/index.js';
import { createLogger } from '../../lib/log/index.js';
import { openStore } from '../../lib/storage/index.js';
import { checkStartup } from '../../lib/setup/index.js';
import { listen } from '../shared/listen.js';
import type { RunningDaemon } from '../shared/run.js';
import { PushHub } from './hub.js';
import { startHeartbeat } from '../../lib/settings/index.js';

/** The push daemon: WebSocket /push fed by the shared event channel (Spec: Events). */
export async function startPush(config: Config): Promise<RunningDaemon> {
  const log = createLogger({ level: config.get('log:level'), name: 'svcmail-push' });
  checkStartup(config, log);
  const registry = productRegistry();
  const store = await openStore(config, productModels(registry));
  const events = await createEventBus(config, log);
  // Upgrades count in the rate limiter's anonymous and signed-in counters: with redis:url the same
  // counters as the api and protocols daemons and every push copy, else this process's own.
  const limits = createRateLimits(config, log);
  const hub = new PushHub({ config, store, events, log }, registry, limits);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/push/status') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(
        JSON.stringify({
          status: 'ok',
          transport: events.transport.name,
          connections: hub.stats.connections,
          unauthenticated: hub.waitingCount,
          channels: hub.channelCount,
          dropped: hub.stats.dropped,
          rss: process.memoryUsage().rss,
        }),
      );
      return;
    }
    res.writeHead(path === '/push' ? 426 : 404, {
      'content-type': 'application/json',
      ...(path === '/push' ? { upgrade: 'websocket' } : {}),
    });
    res.end(
      JSON.stringify(
        path === '/push'
          ? { code: 'api-106', status: 426, message: '/push is a WebSocket' }
          : { code: 'api-107', status: 404, message: 'Not found' },
      ),
    );
  });
  server.on('upgrade', (req, socket, head) => void hub.handleUpgrade(req, socket, head));
  const address = await listen(server, config.get('listen:push'), 'listen:push');
  log.info({ address, transport: events.transport.name }, 'push daemon listening');
  // The open sockets ride on the heartbeat: /api/metrics reports them (svcmail_push_connections).
  const heartbeat = startHeartbeat({ config, store, log }, 'push', {
    details: () => ({ connections: hub.stats.connections, channels: hub.channelCount, dropped: hub.stats.dropped }),
  });
  return {
    address,
    async close() {
      hub.close();
      await heartbeat.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await events.close();
      await limits.close();
      await store.close();
      log.info('push daemon stopped');
    },
  };
}
