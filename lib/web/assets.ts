import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The web app's build (web/vite.config.ts): hashed files in web/build and the manifest that says
// which files each page's entry loads. The pages name their script, what it imports statically
// (preloaded) and its styles; the build script measures the same files against the budget.

/** web/build beside lib/ (sources) or beside dist/lib (a package: packaging copies web/build into dist/web/build). */
export const WEB_BUILD = fileURLToPath(new URL('../../web/build/', import.meta.url));

export interface ManifestChunk {
  file: string;
  name?: string;
  src?: string;
  isEntry?: boolean;
  imports?: string[];
  css?: string[];
}
export type Manifest = Record<string, ManifestChunk>;

export interface PageAssets {
  script: string;
  /** Chunks the script imports statically, all levels: fetched at once instead of one after another. */
  preload: string[];
  styles: string[];
}

/** The manifest of a build, or null when there is none (the web app was not built). */
export function readManifest(dir: string = WEB_BUILD): Manifest | null {
  try {
    return JSON.parse(readFileSync(join(dir, '.vite', 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    return null;
  }
}

/** The files page `app` loads first; null when the build has no such entry. */
export function pageAssets(manifest: Manifest, app: string): PageAssets | null {
  const entry = Object.values(manifest).find((c) => c.isEntry && c.name === app);
  if (!entry) return null;
  const preload = new Set<string>();
  const styles = new Set(entry.css ?? []);
  const visit = (keys: string[] | undefined) => {
    for (const key of keys ?? []) {
      const chunk = manifest[key];
      if (!chunk || preload.has(chunk.file)) continue;
      preload.add(chunk.file);
      for (const css of chunk.css ?? []) styles.add(css);
      visit(chunk.imports);
    }
  };
  visit(entry.imports);
  return { script: entry.file, preload: [...preload], styles: [...styles] };
}
