import { request } from 'node:http';
import type { Config } from '../config/index.js';

/**
 * Tells the worker daemon that work arrived (best effort: the job also runs every
 * mail:jobs:scan:interval_seconds). The worker listens on mail:jobs:wake_address.
 */
export function wakeWorkers(config: Config): void {
  const address = config.get('mail:jobs:wake_address');
  if (!address) return;
  const target = address.startsWith('/') ? { socketPath: address } : { host: address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, ''), port: Number(address.slice(address.lastIndexOf(':') + 1)) };
  const req = request({ ...target, method: 'POST', path: '/wake', timeout: 500, agent: false }, (res) => res.resume());
  req.on('error', () => undefined);
  req.on('timeout', () => req.destroy());
  req.end();
}
