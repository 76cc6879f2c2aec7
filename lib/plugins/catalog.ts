import { autodiscoverPlugin } from './autodiscover/index.js';
import type { PluginManifest } from './types.js';

/**
 * The plugins this build ships, in load order. The api daemon lists and documents them; the
 * protocols daemon loads them. The mobile-sync (eas) and MAPI plugins add themselves here.
 */
export function productPlugins(): PluginManifest[] {
  return [autodiscoverPlugin];
}
