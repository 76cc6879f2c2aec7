import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { catalogue } from '../../../lib/errors/index.js';
import { productRegistry } from '../../../lib/catalog.js';
import { operationsOf, pathOf, type Operation } from '../../../lib/resources/index.js';
import { buildApiApp } from '../../../daemons/api/app.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

const METHOD_OF: Record<Operation, [string, string]> = {
  list: ['get', ''],
  head: ['head', ''],
  get: ['get', '/{id}'],
  create: ['post', ''],
  update: ['put', '/{id}'],
  updateProperty: ['put', '/{id}/{property}'],
  bulkUpdate: ['put', ''],
  delete: ['delete', '/{id}'],
  bulkDelete: ['delete', ''],
};

interface Layer {
  rawPath?: unknown;
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** Every method and path the Express app really routes (nested routers included), in OpenAPI form. */
function expressRoutes(app: Express): string[] {
  const out: string[] = [];
  const join = (prefix: string, path: string) => (path === '/' && prefix ? prefix : `${prefix}${path}`);
  const walk = (stack: Layer[], prefix: string) => {
    for (const l of stack) {
      if (l.route) {
        for (const [m, on] of Object.entries(l.route.methods))
          if (on && m !== '_all') out.push(`${m} ${join(prefix, l.route.path).replace(/:(\w+)/g, '{$1}')}`);
      } else if (l.handle?.stack)
        walk(l.handle.stack, typeof l.rawPath === 'string' && l.rawPath !== '/' ? join(prefix, l.rawPath) : prefix);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return out;
}

describe.each(backends.slice(0, 1))('OpenAPI document and viewer ($name)', (backend) => {
  let api: TestApi;
  let token: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document, checked field by field
  let doc: any;
  beforeAll(async () => {
    api = await startTestApi(backend);
    token = await api.token({ uid: 'alice' });
    doc = (await api.call('GET', '/api/openapi/json', { token })).body;
  });
  afterAll(async () => api?.close());

  it.each(['/api/openapi', '/api/openapi/json', '/api/openapi/yaml', '/api/openapi/assets/swagger-ui.css'])(
    '%s needs a signed-in caller (401 api-100 without)',
    async (path) => {
      const anon = await api.call('GET', path);
      expect(anon).toMatchObject({ status: 401, body: { code: 'api-100' } });
      const bad = await api.call('GET', path, { headers: { authorization: 'Bearer nope' } });
      expect(bad.status).toBe(403);
      expect((await api.call('GET', path, { token })).status).toBe(200);
    },
  );

  it('is OpenAPI 3.1 with no versioned paths', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).filter((p) => /\/v\d+(\/|$)/.test(p))).toEqual([]);
    expect(Object.keys(doc.paths)).toContain('/api/mail/mailboxes/{id}');
  });

  it("lists every generic route of every declared resource (the registry's resources × operations)", () => {
    const registry = productRegistry();
    const expected = registry.all().flatMap((d) => operationsOf(d).map((op) => `${METHOD_OF[op][0]} ${pathOf(d)}${METHOD_OF[op][1]}`));
    const listed = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m} ${p}`));
    expect(expected.length).toBeGreaterThan(20);
    for (const e of expected) expect(listed).toContain(e);
    // and an operation a resource does not offer is not listed (mailboxes cannot be deleted)
    expect(listed).not.toContain('delete /api/mail/mailboxes/{id}');
  });

  it('lists every route the app really serves, and serves every route it lists', () => {
    const { app, openapi } = buildApiApp(api.deps);
    const served = new Set(expressRoutes(app).filter((r) => !r.includes('/api/openapi')));
    // Plugin routes the protocols daemon serves are listed here too (Spec: What the service does, 9); test/integration/plugins checks that daemon serves them.
    const listed = new Set(
      openapi
        .operations()
        .filter((o) => o.doc.daemon !== 'protocols')
        .map((o) => `${o.method} ${o.path}`),
    );
    expect(served.size).toBeGreaterThan(20);
    expect([...served].filter((r) => !listed.has(r))).toEqual([]);
    expect([...listed].filter((r) => !served.has(r))).toEqual([]);
  });

  it('every operation has an operationId, x-svcmail-auth and an error response', () => {
    const ids = new Set<string>();
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(
        ops as Record<string, { operationId: string; 'x-svcmail-auth': string; responses: Record<string, unknown>; security: unknown[] }>,
      )) {
        expect(['none', 'signed-in', 'trusted', 'trusted-fresh', 'ingest-secret', 'basic-or-token'], `${m} ${p}`).toContain(
          op['x-svcmail-auth'],
        );
        expect(op.operationId, `${m} ${p}`).toBeTruthy();
        expect(ids.has(op.operationId), `duplicate ${op.operationId}`).toBe(false);
        ids.add(op.operationId);
        expect(op.responses.default, `${m} ${p}`).toBeDefined();
        if (op['x-svcmail-auth'] !== 'none') expect(op.security.length, `${m} ${p}`).toBeGreaterThan(0);
      }
    }
    expect(doc.paths['/api/status'].get['x-svcmail-auth']).toBe('none');
    expect(doc.paths['/api/mail/domains'].post['x-svcmail-auth']).toBe('trusted');
    expect(doc.paths['/api/mail/folders'].get['x-svcmail-auth']).toBe('signed-in');
  });

  describe('the documented x-svcmail-auth is what the routes do', () => {
    type Op = { method: string; path: string; auth: string };
    const ops = (): Op[] =>
      Object.entries(doc.paths).flatMap(([path, o]) =>
        Object.entries(o as Record<string, { 'x-svcmail-auth': string }>).map(([method, d]) => ({
          method,
          path,
          auth: d['x-svcmail-auth'],
        })),
      );
    const fill = (p: string) => p.replace(/\{\w+\}/g, 'x');
    const TOKEN_AUTH = ['signed-in', 'trusted', 'trusted-fresh'];

    it('every operation that needs a token answers 401 api-100 without one', async () => {
      const checked = ops().filter((o) => TOKEN_AUTH.includes(o.auth));
      expect(checked.length).toBeGreaterThan(20);
      for (const o of checked) {
        const r = await api.call(o.method.toUpperCase(), fill(o.path), {
          body: ['post', 'put', 'delete'].includes(o.method) ? {} : undefined,
        });
        expect(r.status, `${o.method} ${o.path}`).toBe(401);
        if (o.method !== 'head') expect(r.body.code, `${o.method} ${o.path}`).toBe('api-100');
      }
    });

    it('every trusted operation on a collection refuses a plain user with 403 api-103', async () => {
      const checked = ops().filter(
        (o) => o.auth.startsWith('trusted') && !o.path.includes('{') && ['get', 'head', 'post'].includes(o.method),
      );
      expect(checked.map((o) => `${o.method} ${o.path}`)).toEqual(
        expect.arrayContaining(['post /api/mail/domains', 'post /api/mail/mailboxes', 'get /api/mail/audit-log']),
      );
      for (const o of checked) {
        const r = await api.call(o.method.toUpperCase(), o.path, { token, body: o.method === 'post' ? {} : undefined });
        expect(r.status, `${o.method} ${o.path}`).toBe(403);
        if (o.method !== 'head') expect(r.body.code, `${o.method} ${o.path}`).toBe('api-103');
      }
    });
  });

  describe('request and response bodies', () => {
    type Schema = { type?: string | string[]; additionalProperties?: unknown; items?: Schema; oneOf?: Schema[]; anyOf?: Schema[] };
    type Op = {
      method: string;
      path: string;
      auth: string;
      daemon?: string;
      body?: Schema;
      contentType?: string;
      responses: Record<string, { content?: Record<string, { schema?: object }> }>;
    };
    const all = (): Op[] =>
      Object.entries(doc.paths).flatMap(([path, o]) =>
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI operation
        Object.entries(o as Record<string, any>).map(([method, d]) => {
          const content = d.requestBody?.content ?? {};
          const contentType = Object.keys(content)[0];
          return {
            method,
            path,
            auth: d['x-svcmail-auth'],
            daemon: d['x-svcmail-daemon'],
            body: content[contentType]?.schema,
            contentType,
            responses: d.responses,
          };
        }),
      );
    /** The objects a JSON body may be: itself, its array items, each alternative. */
    const objectsOf = (s: Schema): Schema[] => [
      ...(s.type === 'object' ? [s] : []),
      ...(s.items ? objectsOf(s.items) : []),
      ...[...(s.oneOf ?? []), ...(s.anyOf ?? [])].flatMap(objectsOf),
    ];

    it('every JSON request body is closed: the document says an unknown field is refused', () => {
      const json = all().filter((o) => o.body && o.contentType === 'application/json' && !o.daemon);
      expect(json.length).toBeGreaterThan(60);
      const open = json.flatMap((o) =>
        objectsOf(o.body!)
          .filter((s) => s.additionalProperties !== false)
          .map(() => `${o.method} ${o.path}`),
      );
      expect([...new Set(open)]).toEqual([]);
    });

    it('every success answer says what it carries: a schema, another content type, or no body', () => {
      const missing = all().flatMap((o) =>
        Object.entries(o.responses)
          .filter(([status]) => /^2\d\d$/.test(status) && status !== '204' && o.method !== 'head')
          .filter(([, r]) => !r.content || Object.values(r.content).some((c) => !c.schema))
          .map(([status]) => `${o.method} ${o.path} ${status}`),
      );
      expect(missing).toEqual([]);
    });

    /** The generic operations that act on one stored record: they check the body against the record, so they need one. */
    const recordLevel = () =>
      new Set(
        productRegistry()
          .all()
          .flatMap((d) =>
            (['update', 'updateProperty', 'delete'] as const)
              .filter((op) => operationsOf(d).includes(op))
              .map((op) => `${METHOD_OF[op][0]} ${pathOf(d)}${METHOD_OF[op][1]}`),
          ),
      );
    const bulk = (o: Op) => /^(put|delete)$/.test(o.method) && o.body?.type === 'array';

    it('every JSON body route refuses an unknown field and a body of the wrong shape with 400 api-106, before anything else', async () => {
      const admin = await api.token({ uid: 'root-admin', roles: ['admin'], elevated: true });
      const skip = recordLevel();
      const json = all().filter(
        (o) =>
          o.body && o.contentType === 'application/json' && !o.daemon && o.auth !== 'ingest-secret' && !skip.has(`${o.method} ${o.path}`),
      );
      expect(json.length).toBeGreaterThan(40);
      const wrong: string[] = [];
      for (const o of json) {
        const fill = o.path.replace(/\{\w+\}/g, 'x');
        const array = o.body!.type === 'array';
        const unknown = await api.call(o.method.toUpperCase(), fill, {
          token: admin,
          body: array ? [{ uid: 'x', version: 1, notAField: 1 }] : { notAField: 1 },
        });
        // A bulk route answers each item on its own (Spec: bulk operations): the item is refused, not the request.
        const refused = bulk(o)
          ? unknown.status === 200 && unknown.body.results?.[0]?.code === 'api-106'
          : unknown.status === 400 && unknown.body.code === 'api-106';
        if (!refused) wrong.push(`${o.method} ${o.path} {notAField}: ${unknown.status} ${JSON.stringify(unknown.body).slice(0, 120)}`);
        const shape = await api.call(o.method.toUpperCase(), fill, { token: admin, body: array ? {} : [] });
        if (shape.status !== 400 || shape.body.code !== 'api-106')
          wrong.push(`${o.method} ${o.path} wrong shape: ${shape.status} ${shape.body?.code}`);
      }
      expect(wrong).toEqual([]);
    });

    it('the generic routes of one record refuse an unknown field the same way (a real label)', async () => {
      const p = await seedUsers(api);
      const label = await api.call('POST', '/api/mail/labels', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, name: 'l1' } });
      expect(label.status).toBe(201);
      const at = `/api/mail/labels/${label.body.uid}`;
      const v = label.body.version;
      for (const [method, path, body] of [
        ['PUT', at, { name: 'l2', version: v, notAField: 1 }],
        ['PUT', `${at}/name`, { value: 'l2', version: v, notAField: 1 }],
        ['DELETE', at, { version: v, notAField: 1 }],
        ['POST', '/api/mail/labels', { mailboxUid: p.aliceBox.uid, name: 'l3', notAField: 1 }],
      ] as const) {
        const r = await api.call(method, path, { token: p.alice, body });
        expect(r.status, `${method} ${path}`).toBe(400);
        expect(r.body, `${method} ${path}`).toMatchObject({
          code: 'api-106',
          details: expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(/notAField|\(body\)|^$/) })]),
        });
      }
      // and nothing changed
      expect((await api.call('GET', at, { token: p.alice })).body).toMatchObject({ name: 'l1', version: v });
    });
  });

  it('the description lists every catalogue code with its status', () => {
    for (const [code, def] of Object.entries(catalogue)) expect(doc.info.description).toContain(`| ${code} | ${def.status} |`);
    expect(doc.components.schemas.Error.properties.code.enum.sort()).toEqual(Object.keys(catalogue).sort());
  });

  it('the YAML document is the same document', async () => {
    const r = await api.call('GET', '/api/openapi/yaml', { token });
    expect(r.headers.get('content-type')).toMatch(/yaml/);
    expect(YAML.parse(r.body as string)).toEqual(doc);
  });

  it('the HTML viewer loads only local assets, and each of them loads (works offline)', async () => {
    const cookie = { cookie: `jwt=${token}` }; // a browser sends the cookie, not a bearer header
    const page = await api.call('GET', '/api/openapi', { headers: cookie });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const html = page.body as string;
    expect(html).not.toMatch(/https?:\/\//);
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (const ref of refs) {
      const url = new URL(ref, `${api.url}/api/openapi`);
      const r = await fetch(url, { headers: cookie });
      expect(r.status, url.pathname).toBe(200);
      expect((await r.text()).length, url.pathname).toBeGreaterThan(10);
    }
    const init = await (await fetch(new URL('openapi/assets/viewer-init.js', `${api.url}/api/openapi`), { headers: cookie })).text();
    const docUrl = /url: '([^']+)'/.exec(init)![1];
    const fromViewer = await fetch(new URL(docUrl, `${api.url}/api/openapi`), { headers: cookie });
    expect(fromViewer.status).toBe(200);
    expect(await fromViewer.json()).toEqual(doc);
  });

  it('a missing asset is 404, not the directory or a stack', async () => {
    const r = await api.call('GET', '/api/openapi/assets/nope.js', { token });
    expect(r.status).toBe(404);
    expect(JSON.stringify(r.body)).not.toMatch(/node_modules|ENOENT/);
  });
});
