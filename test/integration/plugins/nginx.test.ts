// packaging/nginx/svcmail.conf with a real nginx routes the protocol paths (any case of
// /autodiscover/) to the protocols daemon and /api to the api daemon, over TLS.
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin } from '../../../lib/plugins/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { programPath, requirePrograms } from '../../helpers/peers.js';
import { startStack, type Stack } from './_stack.js';
import { testEas, testMapi } from './_plugins.js';
import { adRequest } from './_xml.js';
import { startShippedNginx, type ShippedNginx } from '../../helpers/nginx.js';

const NGINX = requirePrograms('nginx', 'openssl') ? programPath('nginx') : undefined;
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
  let nginx: ShippedNginx | undefined;
  let port: number;
  let dir: string;

  beforeAll(async () => {
    stack = await startStack(sqlite, {
      values: { 'mail:autodiscover:public_url': 'https://mail.example.org' },
      plugins: [autodiscoverPlugin, testEas, testMapi],
    });
    dir = mkdtempSync(join(tmpdir(), 'svcmail-nginx-protocols-'));
    nginx = await startShippedNginx(NGINX!, dir, {
      '127.0.0.1:8080': new URL(stack.api).host,
      '127.0.0.1:8083': new URL(stack.protocols).host,
    });
    port = nginx.port;
  }, 60_000);
  afterAll(async () => {
    nginx?.stop();
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
