// The plugin host (Architecture: Plugins). A plugin is a manifest (definePlugin) with routes and
// their OpenAPI descriptions, its settings, hooks and the protocols it advertises; PluginHost gives
// each one a scoped API; pluginRouter serves the routes of one daemon with each plugin contained.
export * from './types.js';
export { definePlugin, daemonOf } from './define.js';
export { PluginHost, type PluginHostOptions } from './host.js';
export { PluginStates, PluginStateModel, PLUGIN_MODELS, PLUGIN_STATE_CHANNEL, type PluginState } from './state.js';
export { pluginRouter, documentOtherRoutes, type PluginRouterOptions } from './router.js';
export { pluginAdminRouter } from './admin-routes.js';
export { productPlugins } from './catalog.js';
export { autodiscoverPlugin } from './autodiscover/index.js';
export { easPlugin } from './eas/index.js';
export { DEVICE_MODELS, EasDeviceModel, EasCollectionModel, EasChunkModel } from './device-models.js';
export { deviceRouter } from './device-routes.js';
export { listDevices, getDevice, remoteWipe, unblock, removeDevice, inspectDevice, type DeviceView } from './devices.js';
export { deviceCleanupJob, removeIdleDevices } from './device-cleanup.js';

export { pluginApiRouters } from './api-routers.js';
/** The ActiveSync WBXML codec, for callers outside the plugin (svcmail doctor's mobile-sync probe). */
export * as wbxml from './eas/wbxml/index.js';
