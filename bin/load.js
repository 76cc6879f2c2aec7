// Loads a module from the TypeScript sources when they are present (a checkout: through tsx), else
// from the build in dist/ (the package). "From sources" is what enables development auto-login.
//
// In a checkout, SVCMAIL_DIST names a compiled tree to load instead of the sources: what
// tsconfig.build.json compiles, laid out as the package's dist/ (test/compiled-tree.ts makes one for
// a test run, so the processes the tests start skip tsx). A package ignores it: it runs its own dist/.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = new URL('..', import.meta.url);

export async function load(path) {
  const source = new URL(`${path}.ts`, root);
  if (!existsSync(fileURLToPath(source))) return import(new URL(`dist/${path}.js`, root).href);
  const compiled = process.env.SVCMAIL_DIST;
  if (compiled) return import(pathToFileURL(join(compiled, `${path}.js`)).href);
  const { register } = await import('tsx/esm/api');
  register();
  return import(source.href);
}
