import { createServer } from 'node:http';
import { productModels, productRegistry } from '../../lib/catalog.js';
import type { Config } from '../../lib/config/index.js';
import { createEventBus } from '../../lib/events/index.js';
import { createLogger } from '../../lib/log/index.js';
import { openStore } from '../../lib/storage/index.js';
import { checkStartup } from '../../lib/setup/index.js';
import { listen } from '../shared/listen.js';
import type { RunningDaemon } from '../shared/run.js';
import { buildProtocolsApp } from './app.js';
import { startHeartbeat } from '../../lib/settings/index.js';

/**
 * The protocols daemon: hosts the protocol plugins (mobile sync, MAPI over HTTP, Autodiscover) at
 * their exact paths. It shares the store and the event channel with the other daemons, so the
 * plugins see the same mailboxes and the enabled state the api daemon sets.
 */
export async function startProtocols(config: Config): Promise<RunningDaemon> {
  const log = createLogger({ level: config.get('log:level'), name: 'svcmail-protocols' });
  checkStartup(config, log);
  const registry = productRegistry();
  const store = await openStore(config, productModels(registry));
  const events = await createEventBus(config, log);
  const { app, host, limits } = buildProtocolsApp({ config, store, events, log }, { registry });
  await host.start();
  const server = createServer(app);
  server.keepAliveTimeout = 65_000;
  const address = await listen(server, config.get('listen:protocols'), 'listen:protocols');
  const heartbeat = startHeartbeat({ config, store, log }, 'protocols', {
    details: () => ({ plugins: host.manifests.filter((m) => host.loaded(m.name)).map((m) => m.name) }),
  });
  log.info(
    {
      address,
      datastore: store.kind,
      plugins: host.manifests.map((m) => `${m.name}@${m.version}${host.loaded(m.name) ? '' : ' (failed)'}`),
    },
    'protocols daemon listening',
  );
  return {
    address,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await heartbeat.stop();
      await host.stop();
      await events.close();
      await limits.close();
      await store.close();
      log.info('protocols daemon stopped');
    },
  };
}
