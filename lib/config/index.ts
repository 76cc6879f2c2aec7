export { Config, ConfigError, devSecretFile, loadConfig, runningFromSources, type LoadOptions, type SettingValue } from './load.js';
export { schema, type SettingName } from './schema.js';
export { setting, type SettingDecl } from './define.js';
