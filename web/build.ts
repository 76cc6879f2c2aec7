// npm run build:web: the web app built with Vite into web/build, then the JavaScript each page loads
// first (its entry and static imports) measured gzip-compressed and printed as JSON. Fails when the
// mail page's is over the budget (#31: 250 KB). `--if-stale` builds only when a source is newer
// than the build (npm start and the test suite's set-up use it).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { build } from 'vite';
import { pageAssets, readManifest, WEB_BUILD } from '../lib/web/assets.js';
import { PAGE_ENTRIES } from './vite.config.js';

const WEB = fileURLToPath(new URL('.', import.meta.url));
const BUDGET_KB = 250;

function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((f) => newest(join(path, f))));
}

function isFresh(): boolean {
  try {
    const built = statSync(join(WEB_BUILD, '.vite', 'manifest.json')).mtimeMs;
    return built > Math.max(newest(join(WEB, 'src')), newest(join(WEB, 'vite.config.ts')));
  } catch {
    return false;
  }
}

/** Text files of the build are also written brotli- and gzip-compressed beside themselves: served as they are (lib/web/precompressed.ts). */
function precompress(): void {
  for (const f of readdirSync(WEB_BUILD)) {
    if (!/\.(js|css|svg|json|map)$/.test(f)) continue;
    const raw = readFileSync(join(WEB_BUILD, f));
    writeFileSync(join(WEB_BUILD, `${f}.br`), brotliCompressSync(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }));
    writeFileSync(join(WEB_BUILD, `${f}.gz`), gzipSync(raw, { level: 9 }));
  }
}

/** Builds the web app (unless `ifStale` and it is current); answers the figures it printed. */
export async function buildWeb(opts: { ifStale?: boolean; quiet?: boolean } = {}): Promise<Record<string, unknown> | null> {
  if (opts.ifStale && isFresh()) return null;
  await build({ configFile: join(WEB, 'vite.config.ts'), logLevel: 'warn' });
  const manifest = readManifest();
  if (!manifest) throw new Error('vite wrote no manifest');
  precompress();
  const firstLoad: Record<string, number> = {};
  for (const app of Object.keys(PAGE_ENTRIES)) {
    const assets = pageAssets(manifest, app);
    if (!assets) throw new Error(`the build has no entry for the ${app} page`);
    const bytes = [assets.script, ...assets.preload].reduce(
      (n, f) => n + gzipSync(readFileSync(join(WEB_BUILD, f)), { level: 9 }).length,
      0,
    );
    firstLoad[app] = Math.round(bytes / 102.4) / 10;
  }
  const figures = {
    build: 'web',
    first_load_js_gzip_kb: firstLoad,
    budget_kb: { mail: BUDGET_KB },
    within_budget: firstLoad.mail <= BUDGET_KB,
  };
  if (!opts.quiet) process.stdout.write(`${JSON.stringify(figures)}\n`);
  if (!figures.within_budget)
    throw new Error(`the mail page loads ${firstLoad.mail} KB of JavaScript (gzip) first, over the ${BUDGET_KB} KB budget`);
  return figures;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildWeb({ ifStale: process.argv.includes('--if-stale') }).catch((e: unknown) => {
    process.stderr.write(`build:web: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
