// packaging/nginx/svcmail.conf with a real nginx: the site file passes `nginx -t`, a WebSocket
// client reaches /push through it (TLS, upgrade, Origin and token passed unchanged) and gets
// events, and /internal/ is closed from outside. nginx is required in CI (.ci/apt-packages).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { programPath, requirePrograms } from '../../helpers/peers.js';
import { Client, ORIGIN, seed, startStack, type Stack } from './_stack.js';
import { startShippedNginx, type ShippedNginx } from '../../helpers/nginx.js';

const NGINX = requirePrograms('nginx', 'openssl') ? programPath('nginx') : undefined;

describe.runIf(NGINX)('nginx site file', () => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let nginx: ShippedNginx | undefined;
  let port: number;

  beforeAll(async () => {
    stack = await startStack({ copies: 1 });
    s = await seed(stack);
    nginx = await startShippedNginx(
      NGINX!,
      stack.dir,
      { '127.0.0.1:8080': stack.config.get('listen:api'), '127.0.0.1:8082': stack.config.get('listen:push') },
      { workerConnections: 256 },
    );
    port = nginx.port;
  }, 60_000);
  afterAll(async () => {
    nginx?.stop();
    await stack?.close();
  });

  it('carries /push over TLS to the push daemon, with events', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${port}/push`, {
      headers: { authorization: `Bearer ${s.alice}`, host: 'mail.example.org' },
      origin: ORIGIN,
      rejectUnauthorized: false,
    });
    const c = new Client(ws);
    await c.opened;
    expect(await c.subscribe([s.aliceBox])).toEqual(['alice', s.aliceBox]);
    const box = await stack.call('GET', `/api/mail/mailboxes/${s.aliceBox}`, s.alice);
    const put = await stack.call('PUT', `/api/mail/mailboxes/${s.aliceBox}`, s.alice, {
      version: box.body.version,
      safeSenders: ['friend@remote.example'],
    });
    expect(put.status).toBe(200);
    const f = await c.next((x) => x.type === 'MESSAGE' && x.channel === s.aliceBox);
    expect(f.data).toMatchObject({ type: 'mailbox', action: 'update', data: { uid: s.aliceBox, safeSenders: ['friend@remote.example'] } });
    c.close();
    // The Origin check still happens behind nginx.
    const bad = new Client(
      new WebSocket(`wss://127.0.0.1:${port}/push`, {
        headers: { authorization: `Bearer ${s.alice}` },
        origin: 'https://evil.test',
        rejectUnauthorized: false,
      }),
    );
    await expect(bad.opened).rejects.toThrow('HTTP 403');
  });

  it('closes /internal/ from outside and passes /api to the api daemon', async () => {
    const { request } = await import('node:https');
    const get = (path: string) =>
      new Promise<number>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path, rejectUnauthorized: false, headers: { authorization: `Bearer ${s.alice}` } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        })
          .on('error', reject)
          .end();
      });
    expect(await get('/internal/mta/domain?name=example.test')).toBe(403);
    expect(await get(`/api/mail/mailboxes/${s.aliceBox}`)).toBe(200);
  });
});
