import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

// The reference client must run in browsers: it bundles for the browser platform with no Node
// built-in modules (a `node:` import would fail this build).

describe('lib/keys/client in a browser bundle', () => {
  it('bundles for platform=browser without Node modules', async () => {
    const out = await build({
      entryPoints: ['lib/keys/client/index.ts'],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent',
      metafile: true,
    });
    const inputs = Object.keys(out.metafile.inputs);
    expect(inputs.some((i) => i.includes('hash-wasm'))).toBe(true);
    expect(inputs.some((i) => i.includes('pkijs'))).toBe(true);
    expect(inputs.filter((i) => i.startsWith('node:') || /(^|\/)lib\/(pki|storage|config)\//.test(i))).toEqual([]);
    expect(out.outputFiles[0]!.text.length).toBeGreaterThan(10_000);
  }, 60_000);
});
