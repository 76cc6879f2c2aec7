// Spec: What the service does, 9 — the service describes its own API as OpenAPI, including plugin
// routes. The api daemon's document lists the routes the protocols daemon serves, and the
// protocols app serves exactly those.
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProtocolsApp } from '../../../daemons/protocols/app.js';
import { autodiscoverPlugin, productPlugins } from '../../../lib/plugins/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seed, startStack, type Stack } from './_stack.js';
import { testApiRoute, testEas } from './_plugins.js';

const [sqlite] = await sqlBackends();

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}
function servedRoutes(app: Express): string[] {
  const out: string[] = [];
  const walk = (stack: Layer[]) => {
    for (const l of stack) {
      if (l.route)
        for (const [m, on] of Object.entries(l.route.methods))
          if (on && m !== '_all') out.push(`${m} ${l.route.path.replace(/:(\w+)/g, '{$1}')}`);
      if (l.handle?.stack) walk(l.handle.stack);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return out;
}

describe('plugin routes in the OpenAPI document', () => {
  let stack: Stack;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document, checked field by field
  let doc: any;
  beforeAll(async () => {
    stack = await startStack(sqlite, { plugins: [autodiscoverPlugin, testEas, testApiRoute] });
    const { alice } = await seed(stack);
    doc = (await stack.call('GET', '/api/openapi/json', alice)).body;
  }, 60_000);
  afterAll(async () => stack?.close());

  it('the api daemon lists the Autodiscover routes, marked as served by the protocols daemon', () => {
    const xml = doc.paths['/autodiscover/autodiscover.xml'].post;
    expect(xml).toMatchObject({
      operationId: 'autodiscover_xml',
      'x-svcmail-auth': 'none',
      'x-svcmail-daemon': 'protocols',
      'x-svcmail-plugin': 'autodiscover',
      security: [],
    });
    expect(xml.description).toMatch(/16384 bytes/);
    expect(xml.responses['200'].content['text/xml']).toBeDefined();
    expect(doc.paths['/autodiscover/autodiscover.json/v1.0/{email}'].get.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      'Protocol',
      'email',
    ]);
    expect(doc.paths['/autodiscover/autodiscover.json'].get.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      'Email',
      'Protocol',
    ]);
    expect(doc.paths['/Vendor-Server-ActiveSync'].post).toMatchObject({
      'x-svcmail-auth': 'basic-or-token',
      'x-svcmail-plugin': 'test-eas',
    });
    expect(doc.paths['/api/mail/test-api/whoami'].get).toMatchObject({ 'x-svcmail-daemon': 'api', 'x-svcmail-auth': 'signed-in' });
    expect(doc.paths['/api/system/plugins'].get['x-svcmail-auth']).toBe('trusted-fresh');
    expect(doc.paths['/api/system/plugins/{name}'].put['x-svcmail-auth']).toBe('trusted-fresh');
  });

  it('the protocols daemon serves exactly the routes the document gives it', () => {
    const listed = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.entries(ops as Record<string, { 'x-svcmail-daemon'?: string }>)
        .filter(([, op]) => op['x-svcmail-daemon'] === 'protocols')
        .map(([m]) => `${m} ${p}`),
    );
    const served = servedRoutes(buildProtocolsApp(stack.deps, { plugins: [autodiscoverPlugin, testEas, testApiRoute] }).app).filter(
      (r) => r !== 'get /protocols/status',
    );
    expect(listed.length).toBeGreaterThanOrEqual(4);
    expect(served.sort()).toEqual(listed.sort());
  });

  it('every shipped plugin route has an operationId and a summary, and the shipped set is what a product build loads', () => {
    for (const m of productPlugins())
      for (const r of m.routes) expect(r.doc.operationId && r.doc.summary, `${m.name} ${r.method} ${r.path}`).toBeTruthy();
    expect(productPlugins().map((m) => m.name)).toEqual(['autodiscover', 'eas']);
  });
});
