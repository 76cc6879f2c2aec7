// The SQL backend's processes never load mongoose (30 MiB of memory and 0.15 s of start-up per
// daemon): the document backend is imported only when datastore: document opens it. Checked in a
// fresh process that loads the storage layer and every product model, as a daemon does.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));

it('loading the storage layer and the product models loads TypeORM but not mongoose', () => {
  const script = `
    import { createRequire } from 'node:module';
    await import('./lib/storage/index.ts');
    await import('./lib/catalog.ts');
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    const has = (pkg) => loaded.some((k) => k.includes('/node_modules/' + pkg + '/'));
    process.stdout.write(JSON.stringify({ mongoose: has('mongoose'), mongodb: has('mongodb'), typeorm: has('typeorm') }));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ mongoose: false, mongodb: false, typeorm: true });
}, 60_000);
