export { runSetup, randomSecret, SetupError, type SetupInput, type SetupResult, type SetupStep, type Progress } from './setup.js';
export { caDir, dkimDir, dkimKeyFiles, publicHost } from '../config/index.js';
export { readConfigFile, systemUser, writeConfigFile, SERVICE_USER } from './config-file.js';
export { checkStartup, checkStartupConfig } from './startup.js';
