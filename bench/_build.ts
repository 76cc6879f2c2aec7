// The product as it ships, for the benchmarks that measure daemons: the TypeScript build (tsc, as
// `npm run build` and the Debian package make it) staged in a temporary directory laid out like the
// installed package (dist/, bin/, dist/web, package.json, node_modules), so bin/load.js runs dist/.
// From a checkout the daemons otherwise run through tsx, whose transpiler wraps every closure made
// at run time in a naming helper (esbuild keepNames) — a development-mode cost the appliance never
// pays. BENCH_FROM_SOURCES=1 runs the sources instead (profiles then name the .ts lines).
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

export interface Staged {
  /** The directory laid out like the installed package (bin/ and dist/ in it). */
  root: string;
  /** 'build' or 'sources' (BENCH_FROM_SOURCES=1): what the daemons run. */
  code: 'build' | 'sources';
  /** A bench server (bench/_<name>.ts) as node arguments: the compiled file, or the source through tsx. */
  entry(name: string): string[];
  remove(): void;
}

/** Builds the product (and the given bench servers) into a temporary package tree; about 20 s. */
export function stageBuild(benchServers: string[] = []): Staged {
  if (process.env.BENCH_FROM_SOURCES) {
    return { root, code: 'sources', entry: (name) => ['--import', 'tsx', join(root, 'bench', `${name}.ts`)], remove: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-bench-build-'));
  const config = join(dir, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(root, 'tsconfig.build.json'),
      compilerOptions: {
        outDir: join(dir, 'dist'),
        rootDir: root,
        noEmit: false,
        sourceMap: false,
        declaration: false,
        typeRoots: [join(root, 'node_modules/@types')],
      },
      include: [join(root, 'lib'), join(root, 'cli'), join(root, 'daemons'), ...benchServers.map((n) => join(root, 'bench', `${n}.ts`))],
    }),
  );
  process.stderr.write('bench: building the product (tsc) into a temporary package tree…\n');
  const r = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', config], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the build failed (run npm run build to see why):\n${r.stdout}${r.stderr}`);
  }
  cpSync(join(root, 'bin'), join(dir, 'bin'), { recursive: true });
  // lib/web/assets.ts finds the web app's build at ../../web/build from dist/lib/web, as in the package.
  const web = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'web/build.ts'), '--if-stale'], { encoding: 'utf8', cwd: root });
  if (web.status !== 0) throw new Error(`the web app's build failed (npm run build:web):\n${web.stdout}${web.stderr}`);
  cpSync(join(root, 'web/build'), join(dir, 'dist/web/build'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return {
    root: dir,
    code: 'build',
    entry: (name) => [join(dir, 'dist/bench', `${name}.js`)],
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
