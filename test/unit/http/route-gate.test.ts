// lib/http/route-gate.ts: routers behind prefix checks answer exactly as the routers alone would, in
// order, and none is entered by paths none of its routes can match.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Router } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { except, gateGroup, prefixesOf, series } from '../../../lib/http/index.js';

let server: Server | null = null;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** An app with the router gated, a fallback answering 404 'fallthrough', and a count of the router's entries. */
async function serve(
  router: Router,
): Promise<{ get(path: string, method?: string): Promise<{ status: number; text: string }>; entered: () => number }> {
  let entered = 0;
  const r = router as unknown as { handle(...args: unknown[]): unknown };
  const handle = r.handle.bind(r);
  r.handle = (...args: unknown[]) => {
    entered++;
    return handle(...args);
  };
  const app = express();
  app.use(gateGroup([router]));
  app.use((_req, res) => void res.status(404).send('fallthrough'));
  server = createServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    async get(path, method = 'GET') {
      const r = await fetch(base + path, { method });
      return { status: r.status, text: await r.text() };
    },
    entered: () => entered,
  };
}

describe('gateGroup', () => {
  it("serves the router's routes (any case, HEAD, trailing slash, parameters) and does not enter it for other paths", async () => {
    const router = express.Router();
    router.get('/api/mail/things/:id/parts', (req, res) => void res.send(`parts of ${req.params.id}`));
    router.get('/api/mail/search', (_req, res) => void res.send('search'));
    const app = await serve(router);
    expect(await app.get('/api/mail/things/7/parts')).toEqual({ status: 200, text: 'parts of 7' });
    expect(await app.get('/API/Mail/Things/7/PARTS')).toEqual({ status: 200, text: 'parts of 7' });
    expect(await app.get('/api/mail/search/')).toEqual({ status: 200, text: 'search' });
    expect((await app.get('/api/mail/search', 'HEAD')).status).toBe(200);
    const before = app.entered();
    expect(before).toBe(4);
    expect(await app.get('/api/mail/folders')).toEqual({ status: 404, text: 'fallthrough' });
    expect(await app.get('/api/mail/things')).toEqual({ status: 404, text: 'fallthrough' }); // '/api/mail/things/' is the prefix
    expect(app.entered()).toBe(before);
  });

  it('sees routes added after the first request (plugins enabled later)', async () => {
    const router = express.Router();
    router.get('/api/one', (_req, res) => void res.send('one'));
    const app = await serve(router);
    expect((await app.get('/api/two')).text).toBe('fallthrough');
    router.get('/api/two', (_req, res) => void res.send('two'));
    expect(await app.get('/api/two')).toEqual({ status: 200, text: 'two' });
  });

  it('always enters a router that has middleware for every path, or a route that is a pattern', async () => {
    const withUse = express.Router();
    withUse.use((_req, res, next) => {
      res.setHeader('x-seen', '1');
      next();
    });
    withUse.get('/api/x', (_req, res) => void res.send('x'));
    expect(prefixesOf(withUse)).toBeNull();
    const app = await serve(withUse);
    await app.get('/elsewhere');
    expect(app.entered()).toBe(1);
    const pattern = express.Router();
    pattern.get(/^\/api\/re/, (_req, res) => void res.send('re'));
    expect(prefixesOf(pattern)).toBeNull();
    const params = express.Router();
    params.get('/:anything', (_req, res) => void res.send('p'));
    expect(prefixesOf(params)).toBeNull();
  });

  it("keeps the routers' layers visible through the gate (route listings)", () => {
    const a = express.Router();
    a.get('/api/a', (_req, res) => void res.end());
    const b = express.Router();
    b.get('/api/b', (_req, res) => void res.end());
    const gate = gateGroup([a, b]) as unknown as { stack: unknown[] };
    expect(gate.stack).toEqual([...a.stack, ...b.stack]);
    b.get('/api/c', (_req, res) => void res.end());
    expect(gate.stack.length).toBe(3);
  });

  it('tries the routers in order: a router that does not answer passes on to the next; an error skips the rest', async () => {
    const entered: string[] = [];
    const first = express.Router();
    first.use('/api/shared', (_req, _res, next) => {
      entered.push('first');
      next();
    });
    first.get('/api/first/boom', () => {
      throw new Error('boom');
    });
    const second = express.Router();
    second.get('/api/shared/thing', (_req, res) => {
      entered.push('second');
      res.send('second');
    });
    const third = express.Router();
    third.get('/api/shared/thing', (_req, res) => void res.send('third'));
    third.get('/api/third', (_req, res) => void res.send('third'));
    const app = express();
    app.use(gateGroup([first, second, third]));
    app.use((_req, res) => void res.status(404).send('fallthrough'));
    app.use(
      (e: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        void res.status(500).send(`error ${e.message}`),
    );
    server = createServer(app);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = async (path: string) => {
      const r = await fetch(base + path);
      return { status: r.status, text: await r.text() };
    };
    expect(await get('/api/shared/thing')).toEqual({ status: 200, text: 'second' });
    expect(entered).toEqual(['first', 'second']);
    expect(await get('/api/third')).toEqual({ status: 200, text: 'third' });
    expect(await get('/api/first/boom')).toEqual({ status: 500, text: 'error boom' });
    expect(await get('/api/none')).toEqual({ status: 404, text: 'fallthrough' });
  });
});

/** An app with `handler` as its one layer before a fallback answering 404 'fallthrough' and an error handler answering 500 with the error's message. */
async function serveLayer(
  handler: express.RequestHandler,
): Promise<(path: string) => Promise<{ status: number; text: string; headers: Headers }>> {
  const app = express();
  app.use(handler);
  app.use((_req, res) => void res.status(404).send('fallthrough'));
  app.use(
    (e: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
      void res.status(500).send(`error: ${e.message}`),
  );
  server = createServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return async (path) => {
    const r = await fetch(base + path);
    return { status: r.status, text: await r.text(), headers: r.headers };
  };
}

describe('series', () => {
  it('runs every middleware in order, then the rest of the app; an answer or an error (thrown, passed or rejected) ends the run', async () => {
    const seen: string[] = [];
    const get = await serveLayer(
      series([
        (req, res, next) => {
          seen.push('a');
          res.setHeader('x-a', '1');
          next();
        },
        (req, res, next) => {
          seen.push('b');
          if (req.path === '/answer') return void res.send('answered by b');
          if (req.path === '/passed') return next(new Error('passed'));
          if (req.path === '/thrown') throw new Error('thrown');
          next();
        },
        async (req, _res, next) => {
          seen.push('c');
          if (req.path === '/rejected') throw new Error('rejected');
          setTimeout(() => next(), 1);
        },
        (_req, res, next) => {
          seen.push('d');
          res.setHeader('x-d', '1');
          next();
        },
      ]),
    );
    const through = await get('/x');
    expect(through).toMatchObject({ status: 404, text: 'fallthrough' });
    expect([through.headers.get('x-a'), through.headers.get('x-d')]).toEqual(['1', '1']);
    expect(seen.splice(0)).toEqual(['a', 'b', 'c', 'd']);
    expect(await get('/answer')).toMatchObject({ status: 200, text: 'answered by b' });
    expect(seen.splice(0)).toEqual(['a', 'b']);
    for (const how of ['passed', 'thrown']) {
      expect(await get(`/${how}`)).toMatchObject({ status: 500, text: `error: ${how}` });
      expect(seen.splice(0)).toEqual(['a', 'b']);
    }
    expect(await get('/rejected')).toMatchObject({ status: 500, text: 'error: rejected' });
    expect(seen.splice(0)).toEqual(['a', 'b', 'c']);
  });

  it('keeps the layers of routers among its middleware visible (route listings)', () => {
    const router = express.Router();
    router.get('/api/one', (_req, res) => void res.send('one'));
    const layer = series([(_req, _res, next) => next(), router]) as unknown as { stack: unknown[] };
    expect(layer.stack).toHaveLength(1);
  });
});

describe('except', () => {
  it('passes paths under the prefixes (any case) on without entering the router, and enters it for every other path', async () => {
    let entered = 0;
    const router = express.Router();
    router.use((_req, _res, next) => {
      entered++;
      next();
    });
    router.get('/', (_req, res) => void res.send('page'));
    router.get('/api/x', (_req, res) => void res.send('never reached'));
    const get = await serveLayer(except(['/api/', '/internal/'], router));
    expect(await get('/')).toMatchObject({ status: 200, text: 'page' });
    expect(entered).toBe(1);
    for (const path of ['/api/x', '/API/x', '/internal/mta/domain'])
      expect(await get(path)).toMatchObject({ status: 404, text: 'fallthrough' });
    expect(entered).toBe(1);
    expect(await get('/apiary')).toMatchObject({ status: 404, text: 'fallthrough' }); // not under /api/: entered, no route
    expect(entered).toBe(2);
  });
});
