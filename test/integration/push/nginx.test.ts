// packaging/nginx/svcmail.conf with a real nginx: the site file passes `nginx -t`, a WebSocket
// client reaches /push through it (TLS, upgrade, Origin and token passed unchanged) and gets
// events, and /internal/ is closed from outside. nginx is required in CI (.ci/apt-packages).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { programPath, requirePrograms } from '../../helpers/peers.js';
import { Client, freePort, ORIGIN, seed, startStack, type Stack } from './_stack.js';

const NGINX = requirePrograms('nginx', 'openssl') ? programPath('nginx') : undefined;
const SITE = fileURLToPath(new URL('../../../packaging/nginx/svcmail.conf', import.meta.url));

describe.runIf(NGINX)('nginx site file', () => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let nginx: ChildProcess;
  let port: number;
  let conf: string;

  beforeAll(async () => {
    stack = await startStack({ copies: 1 });
    s = await seed(stack);
    port = await freePort();
    const d = stack.dir;
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=mail.example.org',
        '-keyout',
        join(d, 'key.pem'),
        '-out',
        join(d, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    // The shipped file with only addresses and certificate paths changed for the test.
    const site = readFileSync(SITE, 'utf8')
      .replace('127.0.0.1:8080', stack.config.get('listen:api'))
      .replace('127.0.0.1:8082', stack.config.get('listen:push'))
      .replace(/listen 80;\n\s*listen \[::\]:80;/, `listen 127.0.0.1:${await freePort()};`)
      .replace(/listen 443 ssl http2;\n\s*listen \[::\]:443 ssl http2;/, `listen 127.0.0.1:${port} ssl http2;`)
      .replace('/etc/ssl/svcmail/fullchain.pem', join(d, 'cert.pem'))
      .replace('/etc/ssl/svcmail/privkey.pem', join(d, 'key.pem'));
    writeFileSync(join(d, 'site.conf'), site);
    conf = join(d, 'nginx.conf');
    writeFileSync(
      conf,
      `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;\nworker_processes 1;\npid ${d}/nginx.pid;\nerror_log ${d}/error.log warn;\n` +
        `events { worker_connections 256; }\nhttp {\n access_log off;\n client_body_temp_path ${d}/cb;\n proxy_temp_path ${d}/px;\n fastcgi_temp_path ${d}/fc;\n uwsgi_temp_path ${d}/uw;\n scgi_temp_path ${d}/sc;\n include ${d}/site.conf;\n}\n`,
    );
    execFileSync(NGINX!, ['-t', '-q', '-p', d, '-c', conf], { stdio: 'pipe' });
    nginx = spawn(NGINX!, ['-p', d, '-c', conf], { stdio: 'ignore' });
    const { connect } = await import('node:net');
    const listening = () =>
      new Promise<boolean>((resolve) => {
        const sock = connect(port, '127.0.0.1', () => {
          sock.destroy();
          resolve(true);
        });
        sock.on('error', () => resolve(false));
      });
    for (let i = 0; i < 100 && !(await listening()); i++) await new Promise((r) => setTimeout(r, 100));
  }, 60_000);
  afterAll(async () => {
    nginx?.kill('SIGQUIT');
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
