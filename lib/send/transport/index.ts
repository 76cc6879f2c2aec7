import type { Config } from '../../config/index.js';
import { apiTransport } from './api.js';
import type { Transport } from './port.js';
import { sendmailTransport } from './sendmail.js';

export * from './port.js';
export { sendmailTransport } from './sendmail.js';
export { apiTransport } from './api.js';

/** The configured provider (Spec: Versioning — mail:transport:provider). */
export function createTransport(config: Config): Transport {
  if (config.get('mail:transport:provider') === 'api') {
    return apiTransport({
      url: config.get('mail:transport:api:url'),
      token: config.get('mail:transport:api:token'),
      timeoutMs: config.get('mail:transport:api:timeout_ms'),
    });
  }
  return sendmailTransport({
    path: config.get('mail:transport:sendmail:path'),
    timeoutMs: config.get('mail:transport:sendmail:timeout_ms'),
  });
}
