export { Config, ConfigError, devSecretFile, loadConfig, runningFromSources, type LoadOptions, type SettingValue } from './load.js';
export { schema, type SettingName } from './schema.js';
export { setting, type SettingDecl } from './define.js';
export { flatten, parseText } from './load.js';
export { INGEST_SECRET_DEFAULT } from './settings/appliance.js';
export { caDir, dkimDir, dkimKeyFiles, publicHost } from './paths.js';
