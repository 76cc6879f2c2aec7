// Loads a module from the TypeScript sources when they are present (a checkout: through tsx), else
// from the build in dist/ (the package). "From sources" is what enables development auto-login.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('..', import.meta.url);

export async function load(path) {
  const source = new URL(`${path}.ts`, root);
  if (existsSync(fileURLToPath(source))) {
    const { register } = await import('tsx/esm/api');
    register();
    return import(source.href);
  }
  return import(new URL(`dist/${path}.js`, root).href);
}
