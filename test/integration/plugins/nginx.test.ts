// packaging/nginx/svcmail.conf with a real nginx routes the protocol paths (any case of
// /autodiscover/) to the protocols daemon and /api to the api daemon, over TLS.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin } from '../../../lib/plugins/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { programPath, requirePrograms } from '../../helpers/peers.js';
import { freePort, startStack, type Stack } from './_stack.js';
import { testEas, testMapi } from './_plugins.js';
import { adRequest } from './_xml.js';

const NGINX = requirePrograms('nginx', 'openssl') ? programPath('nginx') : undefined;
const SITE = fileURLToPath(new URL('../../../packaging/nginx/svcmail.conf', import.meta.url));
const [sqlite] = await sqlBackends();

function call(port: number, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        rejectUnauthorized: false,
        headers: { host: 'mail.example.org', ...(body ? { 'content-type': 'text/xml' } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe.runIf(NGINX)('nginx site file: the protocol paths', () => {
  let stack: Stack;
  let nginx: ChildProcess;
  let port: number;
  let dir: string;

  beforeAll(async () => {
    stack = await startStack(sqlite, {
      values: { 'mail:autodiscover:public_url': 'https://mail.example.org' },
      plugins: [autodiscoverPlugin, testEas, testMapi],
    });
    dir = mkdtempSync(join(tmpdir(), 'svcmail-nginx-protocols-'));
    port = await freePort();
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
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    // The shipped file with only addresses and certificate paths changed for the test.
    const site = readFileSync(SITE, 'utf8')
      .replace('127.0.0.1:8080', new URL(stack.api).host)
      .replace('127.0.0.1:8083', new URL(stack.protocols).host)
      .replace(/listen 80;\n\s*listen \[::\]:80;/, `listen 127.0.0.1:${await freePort()};`)
      .replace(/listen 443 ssl http2;\n\s*listen \[::\]:443 ssl http2;/, `listen 127.0.0.1:${port} ssl http2;`)
      .replace('/etc/ssl/svcmail/fullchain.pem', join(dir, 'cert.pem'))
      .replace('/etc/ssl/svcmail/privkey.pem', join(dir, 'key.pem'));
    writeFileSync(join(dir, 'site.conf'), site);
    const conf = join(dir, 'nginx.conf');
    writeFileSync(
      conf,
      `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;\nworker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\n` +
        `events { worker_connections 64; }\nhttp {\n access_log off;\n client_body_temp_path ${dir}/cb;\n proxy_temp_path ${dir}/px;\n fastcgi_temp_path ${dir}/fc;\n uwsgi_temp_path ${dir}/uw;\n scgi_temp_path ${dir}/sc;\n include ${dir}/site.conf;\n}\n`,
    );
    execFileSync(NGINX!, ['-t', '-q', '-p', dir, '-c', conf], { stdio: 'pipe' });
    nginx = spawn(NGINX!, ['-p', dir, '-c', conf], { stdio: 'ignore' });
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
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('sends /autodiscover/ (in any case), /Vendor-Server-ActiveSync and /mapi/ to the protocols daemon', async () => {
    for (const path of ['/autodiscover/autodiscover.xml', '/Autodiscover/Autodiscover.xml']) {
      const r = await call(port, 'POST', path, adRequest('alice@example.org'));
      expect(r.status, path).toBe(200);
      expect(r.text).toContain('<Url>https://mail.example.org/Vendor-Server-ActiveSync</Url>');
    }
    expect((await call(port, 'OPTIONS', '/Vendor-Server-ActiveSync')).status).toBe(200);
    // nginx's own X-Forwarded-Proto arrives: the request went straight to the protocols daemon,
    // not round the api daemon's front door (which would say http).
    const mapi = await call(port, 'POST', '/mapi/emsmdb?MailboxId=a', '<x/>');
    expect(mapi.status).toBe(200);
    expect(JSON.parse(mapi.text)).toMatchObject({ bytes: 4, query: { MailboxId: 'a' }, proto: 'https' });
    expect(JSON.parse((await call(port, 'GET', '/api/status')).text)).toMatchObject({ status: 'ok' });
  });
});
