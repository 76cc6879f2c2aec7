import { autodiscoverPlugin } from './autodiscover/index.js';
import { easPlugin } from './eas/index.js';
import type { PluginManifest } from './types.js';

/**
 * The plugins this build ships, in load order. The api daemon lists and documents them; the
 * protocols daemon loads them. The MAPI plugin adds itself here.
 */
export function productPlugins(): PluginManifest[] {
  return [autodiscoverPlugin, easPlugin];
}
