// The node_modules a package ships: the packages the daemons and the CLI load at run time, as they
// are installed in this checkout (native modules were built for this Node), without what only
// builds, types or tests them.
import { cpSync, existsSync, lstatSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';

/** Production dependencies that nothing loads in a build, and why each is left out. */
export const BUILD_ONLY: Record<string, string> = {
  // bin/load.js imports tsx only when TypeScript sources sit beside it (a checkout); the package has dist/ only.
  tsx: 'loads the TypeScript sources of a checkout',
  // better-sqlite3's install script; the package ships the binary built here.
  'prebuild-install': 'downloads native binaries at install time',
  // C++ headers unix-dgram compiles against.
  nan: 'headers for compiling native modules',
};

interface Manifest {
  name?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const manifest = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

/** Node's lookup: the nearest node_modules/<name> from `from` up to `root`. */
function resolvePackage(name: string, from: string, root: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dirname(dir) === dir) return null;
  }
}

/**
 * Every installed package reachable from the root's dependencies, following dependencies, the
 * optional ones that are installed, and required peers; BUILD_ONLY packages and what only they
 * need are not reached.
 */
export function runtimePackages(root: string): string[] {
  const seen = new Set<string>();
  const queue: Array<[string, string]> = Object.keys(manifest(root).dependencies ?? {}).map((n) => [n, root]);
  while (queue.length > 0) {
    const [name, from] = queue.shift()!;
    if (name in BUILD_ONLY) continue;
    const dir = resolvePackage(name, from, root);
    if (!dir || seen.has(dir)) continue;
    seen.add(dir);
    const m = manifest(dir);
    const peers = Object.keys(m.peerDependencies ?? {}).filter((p) => !m.peerDependenciesMeta?.[p]?.optional);
    for (const dep of [...Object.keys(m.dependencies ?? {}), ...Object.keys(m.optionalDependencies ?? {}), ...peers])
      queue.push([dep, dir]);
  }
  return [...seen].sort();
}

// Type declarations, source maps, TypeScript sources, and C/C++ sources with their makefiles (of a
// native addon, or of a WebAssembly build): nothing loads them under node.
const UNUSED_FILE = /\.([cm]?ts|map|c|cc|cpp|cxx|h|hh|hpp|gyp|gypi)$|^Makefile$/;
const UNUSED_DIR = new Set(['test', 'tests', '__tests__', '.github', '.husky', '.vscode']);

/**
 * Whether a path inside a package (relative to its directory) runs: not a nested package (each is
 * copied on its own), not a test or type file or source to compile; in a native module (`native`:
 * binding.gyp beside it) only the built addon of build/, not test addons, object files or the
 * vendored sources of deps/.
 */
export function shipped(rel: string, isDir: boolean, native: boolean): boolean {
  if (rel === '') return true;
  const parts = rel.split(sep);
  const name = basename(rel);
  if (parts[0] === 'node_modules') return false;
  if (parts.some((p) => UNUSED_DIR.has(p))) return false;
  if (!isDir && UNUSED_FILE.test(name)) return false;
  if (!native) return true;
  if (parts[0] === 'deps') return false;
  if (parts[0] === 'build') {
    if (isDir) return parts.length === 1 || (parts.length === 2 && parts[1] === 'Release');
    return parts.length === 3 && parts[1] === 'Release' && name.endsWith('.node') && !name.startsWith('test_');
  }
  return true;
}

/** Copies the runtime packages of `root` into `dest` (an app directory holding node_modules/). */
export function copyRuntimeModules(root: string, dest: string): string[] {
  const packages = runtimePackages(root);
  for (const dir of packages) {
    const native = existsSync(join(dir, 'binding.gyp'));
    cpSync(dir, join(dest, relative(root, dir)), {
      recursive: true,
      dereference: false,
      filter: (src) => shipped(relative(dir, src), lstatSync(src).isDirectory(), native),
    });
  }
  removeEmptyDirs(join(dest, 'node_modules'));
  return packages;
}

function removeEmptyDirs(dir: string): boolean {
  let empty = true;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory() && removeEmptyDirs(join(dir, e.name))) continue;
    empty = false;
  }
  if (empty) rmdirSync(dir);
  return empty;
}
