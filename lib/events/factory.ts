import { join, resolve } from 'node:path';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { HubTransport } from './hub-transport.js';
import { redisConnector } from './redis-client.js';
import { RedisTransport } from './redis-transport.js';
import { SharedEventBus } from './shared-bus.js';

/** The embedded hub's socket: events:hub:socket, else <data_dir>/run/events.sock. */
export function hubSocketPath(config: Config): string {
  return config.get('events:hub:socket') || join(resolve(config.get('data_dir')), 'run', 'events.sock');
}

/**
 * The shared event channel every daemon uses: Redis pub/sub when redis:url is set (many hosts),
 * else the embedded hub (one host). Resolves once connected, so nothing published after start is lost.
 */
export async function createEventBus(config: Config, log?: Logger): Promise<SharedEventBus> {
  const url = config.get('redis:url');
  const transport = url
    ? new RedisTransport(redisConnector(config), config.get('redis:prefix'), log)
    : new HubTransport(hubSocketPath(config), log);
  const bus = new SharedEventBus(transport, log);
  try {
    await bus.start();
  } catch (e) {
    await bus.close().catch(() => undefined); // no client left retrying behind a daemon that did not start
    throw e;
  }
  log?.info({ transport: transport.name }, 'shared event channel connected');
  return bus;
}
