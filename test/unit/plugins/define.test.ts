// definePlugin refuses a manifest that would misbehave later, naming the plugin and the problem.
import { describe, expect, it } from 'vitest';
import { definePlugin, type PluginManifest, type PluginRoute } from '../../../lib/plugins/index.js';
import { checkNoClash, daemonOf } from '../../../lib/plugins/define.js';
import type { SettingName } from '../../../lib/config/index.js';

const route = (path: string, over: Partial<PluginRoute> = {}): PluginRoute => ({
  method: 'get',
  path,
  auth: 'none',
  doc: { operationId: `op${path}`, summary: 's', tags: [], responses: {} },
  handle: () => ({ status: 200 }),
  ...over,
});
const manifest = (over: Partial<PluginManifest> = {}): PluginManifest => ({
  name: 'x-test',
  version: '1',
  summary: 's',
  routes: [],
  settings: [],
  protocols: [],
  ...over,
});

describe('definePlugin', () => {
  it('takes exact protocol paths and /api/mail/<name> routes', () => {
    const m = definePlugin(
      manifest({ routes: [route('/Vendor-Server-ActiveSync'), route('/api/mail/x-test/things'), route('/api/mail/x-test')] }),
    );
    expect(m.routes.map(daemonOf)).toEqual(['protocols', 'api', 'api']);
  });

  it.each<[string, Partial<PluginManifest>, RegExp]>([
    ['a bad name', { name: 'Bad Name' }, /lower-case/],
    ['no version', { version: '' }, /version/],
    ['a route under /api outside /api/mail/<name>', { routes: [route('/api/mail/other/x')] }, /belong under \/api\/mail\/x-test/],
    ['a route at /api/system', { routes: [route('/api/system/plugins')] }, /belong under/],
    ['a relative path', { routes: [route('mapi')] }, /absolute/],
    ['the same route twice', { routes: [route('/mapi/a'), route('/MAPI/a')] }, /twice/],
    ['a zero body limit', { routes: [route('/mapi/a', { body: { type: 'raw', limit: 0 } })] }, /limit/],
    [
      'a route without operationId',
      { routes: [route('/mapi/a', { doc: { operationId: '', summary: 's', tags: [], responses: {} } })] },
      /operationId/,
    ],
    ['an undeclared setting', { settings: ['mail:x-test:nope' as SettingName] }, /not declared/],
    ["another area's setting", { settings: ['auth:secret'] }, /must be named mail:x-test:/],
    [
      'a protocol endpoint that is not a path',
      { protocols: [{ name: 'ActiveSync', endpoints: { url: 'https://elsewhere.example/x' } }] },
      /must be a path/,
    ],
  ])('refuses %s', (_n, over, message) => {
    expect(() => definePlugin(manifest(over))).toThrow(message);
  });

  it('two plugins may not claim the same route, nor the same name', () => {
    const a = definePlugin(manifest({ name: 'a', routes: [route('/mapi/x')] }));
    const b = definePlugin(manifest({ name: 'b', routes: [route('/MAPI/x')] }));
    expect(() => checkNoClash([a, b])).toThrow(/plugins a and b both declare get \/mapi\/x/);
    expect(() => checkNoClash([a, a])).toThrow(/loaded twice/);
  });
});
