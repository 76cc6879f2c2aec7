import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { devSecretFile, loadConfig } from '../../../lib/config/index.js';

// The development secret `svcmail start` keeps in data_dir: read only under NODE_ENV development
// (or dev) while auth:secret is not set; never in production, never under the test suite's NODE_ENV.
describe('the development secret in data_dir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-devsecret-'));
  writeFileSync(devSecretFile(dir), 'a'.repeat(64));
  const load = (NODE_ENV: string, values: Record<string, unknown> = {}) =>
    loadConfig({ env: { NODE_ENV }, values: { data_dir: dir, ...values } as never });

  it('is the secret in development and dev', () => {
    expect(load('development').get('auth:secret')).toBe('a'.repeat(64));
    expect(load('dev').get('auth:secret')).toBe('a'.repeat(64));
  });
  it('never replaces a configured secret', () => {
    expect(load('development', { 'auth:secret': 'configured-secret-0123456789' }).get('auth:secret')).toBe('configured-secret-0123456789');
  });
  it('is not read in production (auth:secret stays required there) nor under NODE_ENV=test', () => {
    expect(() => load('production')).toThrow(/auth:secret: required/);
    expect(load('test').has('auth:secret')).toBe(false);
  });
});
