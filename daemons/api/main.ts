import { createServer } from 'node:http';
import { createEventBus } from '../../lib/events/index.js';
import { createLogger } from '../../lib/log/index.js';
import { openStore } from '../../lib/storage/index.js';
import { productModels, productRegistry } from '../../lib/catalog.js';
import type { Config } from '../../lib/config/index.js';
import { buildApiApp } from './app.js';
import { listen } from '../shared/listen.js';
import type { RunningDaemon } from '../shared/run.js';
import { checkStartup } from '../../lib/setup/index.js';
import { forwardPushUpgrades } from './front-door.js';
import { startHeartbeat } from '../../lib/settings/index.js';

/** The api daemon: wires config, store, events and the app, then listens. */
export async function startApi(config: Config): Promise<RunningDaemon> {
  const log = createLogger({ level: config.get('log:level'), name: 'svcmail-api' });
  checkStartup(config, log);
  const registry = productRegistry();
  const store = await openStore(config, productModels(registry));
  const events = await createEventBus(config, log);
  const { app, limits } = buildApiApp({ config, store, events, log }, registry);
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  forwardPushUpgrades(server, config.get('listen:push'), log);
  const address = await listen(server, config.get('listen:api'), 'listen:api');
  log.info({ address, datastore: store.kind }, 'api daemon listening');
  const heartbeat = startHeartbeat({ config, store, log }, 'api');
  return {
    address,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await heartbeat.stop();
      await events.close();
      await limits.close();
      await store.close();
      log.info('api daemon stopped');
    },
  };
}
