// lib/http/compose.ts: middleware run as one layer answer exactly as they would as separate layers.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { except, series } from '../../../lib/http/index.js';

let server: Server | null = null;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

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
