import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, schema, type LoadOptions } from '../../../lib/config/index.js';

const dir = mkdtempSync(join(tmpdir(), 'svcmail-config-'));
let n = 0;
function file(content: unknown): string {
  const p = join(dir, `c${n++}.json`);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}
const dev = (opts: LoadOptions = {}) => loadConfig({ ...opts, env: { NODE_ENV: 'test', ...(opts.env ?? {}) } });

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    const msg = (e as Error).message;
    expect(msg).not.toContain('\n');
    return msg;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration sources, later wins', () => {
  const f = file({ listen: { api: '127.0.0.1:1001' }, 'log:level': 'warn', body_limit_bytes: 1111 });
  it.each<[string, LoadOptions, string, string, number]>([
    ['defaults', {}, '127.0.0.1:8080', 'info', 1_048_576],
    ['file over defaults', { file: f }, '127.0.0.1:1001', 'warn', 1111],
    [
      'env over file',
      { file: f, env: { SVCMAIL__listen__api: '127.0.0.1:2002', SVCMAIL__body_limit_bytes: '2222' } },
      '127.0.0.1:2002',
      'warn',
      2222,
    ],
    [
      '--set over env',
      { file: f, env: { SVCMAIL__listen__api: '127.0.0.1:2002' }, set: ['listen:api=127.0.0.1:3003', 'log:level=error'] },
      '127.0.0.1:3003',
      'error',
      1111,
    ],
    ['SVCMAIL_CONFIG names the file', { env: { SVCMAIL_CONFIG: f } }, '127.0.0.1:1001', 'warn', 1111],
  ])('%s', (_what, opts, listen, level, limit) => {
    const c = dev(opts);
    expect(c.get('listen:api')).toBe(listen);
    expect(c.get('log:level')).toBe(level);
    expect(c.get('body_limit_bytes')).toBe(limit);
  });

  it('the last --set of a setting wins', () => {
    expect(dev({ set: ['log:level=warn', 'log:level=debug'] }).get('log:level')).toBe('debug');
  });

  it('nested and flat keys in a file mean the same settings, and may be mixed', () => {
    const nested = dev({
      file: file({ auth: { options: { audience: 'a.test', issuer: 'i.test' } }, mail: { security: { elevation_max_age_seconds: 60 } } }),
    });
    const flat = dev({
      file: file({ 'auth:options:audience': 'a.test', 'auth:options:issuer': 'i.test', 'mail:security:elevation_max_age_seconds': 60 }),
    });
    const mixed = dev({
      file: file({
        auth: { 'options:audience': 'a.test', options: { issuer: 'i.test' } },
        'mail:security': { elevation_max_age_seconds: 60 },
      }),
    });
    for (const c of [nested, flat, mixed]) {
      expect([c.get('auth:options:audience'), c.get('auth:options:issuer'), c.get('mail:security:elevation_max_age_seconds')]).toEqual([
        'a.test',
        'i.test',
        60,
      ]);
    }
  });

  it('environment values are JSON when the setting is not text, and the case of names is kept', () => {
    const c = dev({
      env: {
        SVCMAIL__trusted_roles: '["admin","root"]',
        SVCMAIL__mail__dev_auto_login__enabled: 'false',
        SVCMAIL__datastores__sql__url: 'postgres://u@h/db',
      },
    });
    expect(c.get('trusted_roles')).toEqual(['admin', 'root']);
    expect(c.get('mail:dev_auto_login:enabled')).toBe(false);
    expect(c.get('datastores:sql:url')).toBe('postgres://u@h/db');
    expect(configError(() => dev({ env: { SVCMAIL__LOG__LEVEL: 'warn' } }))).toContain('LOG:LEVEL');
  });

  it('a text setting keeps a value that looks like JSON', () => {
    expect(dev({ set: ['auth:options:audience=123'] }).get('auth:options:audience')).toBe('123');
  });

  it('the defaults the issue names', () => {
    const c = dev();
    expect(c.get('auth:allowQueryParam')).toBe(false);
    expect(c.get('trusted_roles')).toEqual(['admin']);
    expect(c.get('mail:security:elevation_max_age_seconds')).toBe(900);
    expect(c.get('mail:dev_auto_login:enabled')).toBe(true);
    expect(c.get('datastore')).toBe('sql');
    expect(c.get('datastores:sql:synchronize')).toBe(true);
    expect(c.get('listen:api')).toBe('127.0.0.1:8080');
  });
});

describe('configuration errors: one line naming the setting', () => {
  it.each<[string, () => unknown, string[]]>([
    ['an unknown setting in a file', () => dev({ file: file({ nosuch: { thing: 1 } }) }), ['unknown setting nosuch']],
    ['an unknown flat setting in a file', () => dev({ file: file({ 'listen:imap': 'x' }) }), ['listen:imap']],
    ['an unknown setting in the environment', () => dev({ env: { SVCMAIL__listen__nope: '1' } }), ['listen:nope', 'SVCMAIL__listen__nope']],
    ['an unknown setting in --set', () => dev({ set: ['foo:bar=1'] }), ['foo:bar']],
    ['--set without a value', () => dev({ set: ['log:level'] }), ['log:level']],
    ['a bad value in a file', () => dev({ file: file({ body_limit_bytes: 'big' }) }), ['body_limit_bytes', 'config file']],
    ['a bad value in the environment', () => dev({ env: { SVCMAIL__listen__api: 'nowhere' } }), ['listen:api', 'SVCMAIL__listen__api']],
    ['a bad value in --set', () => dev({ set: ['log:level=loud'] }), ['log:level', '--set']],
    ['a bad datastore', () => dev({ set: ['datastore=oracle'] }), ['datastore']],
    ['a short secret', () => dev({ set: ['auth:secret=short'] }), ['auth:secret', '16']],
    [
      'auth:allowQueryParam true (file)',
      () => dev({ file: file({ auth: { allowQueryParam: true } }) }),
      ['auth:allowQueryParam', 'must stay false'],
    ],
    ['auth:allowQueryParam true (--set)', () => dev({ set: ['auth:allowQueryParam=true'] }), ['auth:allowQueryParam']],
    ['a missing file', () => dev({ file: join(dir, 'absent.json') }), ['absent.json', 'not found']],
    ['a file that is not JSON', () => dev({ file: file('{ nope') }), ['config file']],
    ['a file holding an array', () => dev({ file: file([1, 2]) }), ['JSON object']],
  ])('%s', (_what, fn, parts) => {
    const msg = configError(fn);
    for (const p of parts) expect(msg).toContain(p);
  });

  it.each([undefined, 'production', 'staging'])('auth:secret is required when NODE_ENV is %s', (nodeEnv) => {
    const env = nodeEnv ? { NODE_ENV: nodeEnv } : {};
    expect(configError(() => loadConfig({ env }))).toMatch(/^auth:secret: required/);
    const c = loadConfig({ env: { ...env, SVCMAIL__auth__secret: 'a-production-secret-0123' } });
    expect(c.isDevelopment).toBe(false);
    expect(c.get('auth:secret')).toBe('a-production-secret-0123');
  });

  it.each(['dev', 'development', 'test'])('auth:secret is optional when NODE_ENV is %s', (nodeEnv) => {
    const c = loadConfig({ env: { NODE_ENV: nodeEnv } });
    expect(c.isDevelopment).toBe(true);
    expect(c.has('auth:secret')).toBe(false);
  });
});

describe('redacted()', () => {
  it('masks every secret setting and shows the others', () => {
    const c = dev({ set: ['auth:secret=super-secret-value-0123456789'], env: { SVCMAIL__log__level: 'warn' } });
    const r = c.redacted();
    expect(r['auth:secret']).toBe('********');
    expect(r['log:level']).toBe('warn');
    expect(JSON.stringify(r)).not.toContain('super-secret-value');
    for (const [name, decl] of Object.entries(schema)) {
      if ((decl as { secret?: boolean }).secret && c.has(name as keyof typeof schema)) expect(r[name], name).toBe('********');
    }
    expect(Object.keys(r).sort()).toEqual(Object.keys(schema).sort());
  });

  it('an unset secret shows as unset, not as a mask', () => {
    expect(dev().redacted()['auth:secret']).toBeUndefined();
  });
});
