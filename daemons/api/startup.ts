import { ConfigError, type Config } from '../../lib/config/index.js';
import { devAutoLoginActive } from '../../lib/auth/index.js';
import type { Logger } from '../../lib/log/index.js';

/** Refuse to start in a shape that would fail every request or expose the server. */
export function checkStartup(config: Config, log: Logger): void {
  if (!config.has('auth:secret')) {
    if (!config.isDevelopment) throw new ConfigError('auth:secret: required (the secret shared with the sign-in service)');
    log.warn('auth:secret is not set: no token can be verified (development only)');
  }
  if (devAutoLoginActive(config)) {
    log.warn({ uid: config.get('mail:dev_auto_login:uid'), roles: config.get('mail:dev_auto_login:roles') }, 'development auto-login is ON: requests without a token are signed in as the development administrator');
  }
}
