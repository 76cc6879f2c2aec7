// The daemons and the CLI compiled once for a test run: the processes the tests start (hundreds of
// CLI runs and daemon starts) load it through SVCMAIL_DIST (bin/load.js) instead of transpiling the
// sources through tsx each time. A tree per content of the sources, under node_modules/.cache, so
// an unchanged checkout reuses it and two runs at once never write into the same one.
//
// Laid out as the package (packaging/deb/build.ts): the compiled modules in dist/, the web app's build at
// dist/web/build, bin/, packaging/ and package.json beside dist/ — what the compiled modules find
// from their own location (lib/web/assets.ts, lib/version.ts, cli/foreground.ts, cli/supervisor.ts).
// Those are links to this checkout, so a web build made later in the run is the one served.
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(ROOT, 'node_modules/.cache/svcmail-test-dist');
/**
 * A tree no run has started on for this long is removed: a run lasts under an hour, and a checkout
 * being edited makes a tree (3 MB) for nearly every run.
 */
const UNUSED_MS = 2 * 3600_000;

/** What tsconfig.build.json compiles, and how. */
function buildConfig(): ts.ParsedCommandLine {
  return ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.build.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  })!;
}

/** sha256 over the compiler's version, the configuration and every input file's path and content. */
function sourcesHash(config: ts.ParsedCommandLine): string {
  const h = createHash('sha256').update(`${ts.version}\0${JSON.stringify(config.options)}`);
  for (const file of config.fileNames) h.update(`\0${file}\0`).update(readFileSync(file));
  return h.digest('hex').slice(0, 16);
}

/**
 * Each file transpiled on its own, as tsx runs them (no type check: that is npm run typecheck's
 * business), into ES modules (what package.json's "type" makes them under NodeNext); a syntax error
 * throws. For these sources the output is the same as tsc's, in a third of its time.
 */
function transpile(config: ts.ParsedCommandLine, outDir: string): void {
  const compilerOptions = {
    ...config.options,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    sourceMap: false,
  };
  for (const fileName of config.fileNames.filter((f) => !f.endsWith('.d.ts'))) {
    const out = ts.transpileModule(readFileSync(fileName, 'utf8'), { compilerOptions, fileName, reportDiagnostics: true });
    if (out.diagnostics?.length)
      throw new Error(ts.formatDiagnostics(out.diagnostics, { ...ts.sys, getCanonicalFileName: (f) => f, getNewLine: () => '\n' }));
    const dest = join(outDir, relative(ROOT, fileName).replace(/\.tsx?$/, '.js'));
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(dest, out.outputText);
  }
}

function compile(config: ts.ParsedCommandLine, tree: string): void {
  transpile(config, join(tree, 'dist'));
  mkdirSync(join(tree, 'dist/web'), { recursive: true });
  symlinkSync(join(ROOT, 'web/build'), join(tree, 'dist/web/build'));
  for (const link of ['bin', 'packaging', 'package.json']) symlinkSync(join(ROOT, link), join(tree, link));
}

function pruneUnused(keep: string): void {
  for (const name of readdirSync(CACHE)) {
    const path = join(CACHE, name);
    if (path !== keep && Date.now() - statSync(path).mtimeMs > UNUSED_MS) rmSync(path, { recursive: true, force: true });
  }
}

/** The compiled tree's dist/ for the sources as they are now, compiled if no run has yet. */
export function compiledTree(): string {
  const config = buildConfig();
  const tree = join(CACHE, sourcesHash(config));
  if (!existsSync(tree)) {
    const partial = `${tree}.partial-${process.pid}`;
    rmSync(partial, { recursive: true, force: true });
    try {
      compile(config, partial);
      renameSync(partial, tree);
    } catch (e) {
      rmSync(partial, { recursive: true, force: true });
      // Another run compiled the same sources first: its tree is as good.
      if (!existsSync(tree)) throw e;
    }
  }
  const now = new Date();
  utimesSync(tree, now, now);
  pruneUnused(tree);
  return join(tree, 'dist');
}
