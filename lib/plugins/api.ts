// The plugin API: all a protocol plugin (lib/plugins/<name>/) may import from the product. The host
// (./host.ts) implements PluginHostApi; a plugin reaches data and events only through it, so the
// product can change behind this file without touching a plugin.
export type * from './types.js';
export { definePlugin } from './define.js';
export { ApiError, invalid, isApiError, type ErrorCode } from '../errors/index.js';
export type { SettingName } from '../config/index.js';
