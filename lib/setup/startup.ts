import { devAutoLoginActive } from '../auth/index.js';
import { ConfigError, type Config } from '../config/index.js';
import { checkIngestSecret } from '../ingest/index.js';
import type { Logger } from '../log/index.js';

/**
 * What the daemons refuse to start with beyond the schema, as one ConfigError naming the setting.
 * `svcmail config check` runs exactly this, so "configuration OK" means the daemons start.
 */
export function checkStartupConfig(config: Config): void {
  if (!config.has('auth:secret') && !config.isDevelopment)
    throw new ConfigError('auth:secret: required (the secret shared with the sign-in service)');
  checkIngestSecret(config);
}

/** Refuse to start in a shape that would fail every request or expose the server; warn about development shortcuts. */
export function checkStartup(config: Config, log: Logger): void {
  checkStartupConfig(config);
  if (!config.has('auth:secret')) log.warn('auth:secret is not set: no token can be verified (development only)');
  if (devAutoLoginActive(config)) {
    log.warn(
      { uid: config.get('mail:dev_auto_login:uid'), roles: config.get('mail:dev_auto_login:roles') },
      'development auto-login is ON: requests without a token are signed in as the development administrator',
    );
  }
}
