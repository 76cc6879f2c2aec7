import { existsSync } from 'node:fs';
import type { Config } from '../config/index.js';
import { allRefused, createTransport, type Transport } from './transport/index.js';

/**
 * The configured transport; in development with no sendmail binary, a transport that refuses every
 * external recipient outright (Spec: Versioning — local recipients are delivered directly).
 */
export function outboundTransport(config: Config): Transport {
  const provider = config.get('mail:transport:provider');
  if (provider === 'sendmail' && config.isDevelopment && !existsSync(config.get('mail:transport:sendmail:path'))) {
    return {
      name: 'development',
      send: async (req) => allRefused(req.envelopeTo, 'development without a sendmail binary: external recipients are refused', true),
      check: async () => undefined,
    };
  }
  return createTransport(config);
}
