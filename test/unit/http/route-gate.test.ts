// lib/http/route-gate.ts: routers behind prefix checks answer exactly as the routers alone would, in
// order, and none is entered by paths none of its routes can match.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Router } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { gateGroup, prefixesOf } from '../../../lib/http/route-gate.js';

let server: Server | null = null;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** An app with the router gated, a fallback answering 404 'fallthrough', and a count of the router's entries. */
async function serve(router: Router): Promise<{ get(path: string, method?: string): Promise<{ status: number; text: string }>; entered: () => number }> {
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
  it('serves the router\'s routes (any case, HEAD, trailing slash, parameters) and does not enter it for other paths', async () => {
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

  it('keeps the routers\' layers visible through the gate (route listings)', () => {
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
    app.use((e: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).send(`error ${e.message}`));
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
