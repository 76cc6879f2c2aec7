// The protocols daemon as a process: `svcmail start --foreground` runs it with the others, the api
// daemon's front door reaches it across processes, SIGINT stops it cleanly; `svcmail doctor` checks
// it is up and probes Autodiscover (both schemas and JSON v2) on an https public URL.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttps, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { selfSignedCert } from '../../helpers/tls.js';
import { CHECK_IDS } from '../../../lib/setup/doctor-ids/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAEMONS } from '../../../cli/daemons.js';
import { schema } from '../../../lib/config/index.js';
import { autodiscoverPlugin } from '../../../lib/plugins/index.js';
import { TEST_SECRET } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';
import { freePort, request, seed, startStack, type Stack } from './_stack.js';
import { testEas, testMapi } from './_plugins.js';
import { adRequest } from './_xml.js';

const withOpenssl = requirePrograms('openssl');

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/svcmail.js');
const [sqlite] = await sqlBackends();

describe('svcmail start --foreground runs the protocols daemon', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-protocols-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is one of the supervised daemons, with its entry point', () => {
    expect(DAEMONS.find((d) => d.name === 'protocols')).toMatchObject({ bin: 'svcmail-protocols.js' });
  });

  it('serves Autodiscover itself and through the api port; SIGINT stops everything with exit 0', async () => {
    const ports: Record<string, string> = {};
    for (const [name, decl] of Object.entries(schema)) {
      const d = (decl as { default?: unknown }).default;
      if (typeof d === 'string' && /^127\.0\.0\.1:\d+$/.test(d)) ports[name] = `127.0.0.1:${await freePort()}`;
    }
    const f = join(dir, 'svcmail.json');
    writeFileSync(
      f,
      JSON.stringify({
        ...ports,
        'auth:secret': TEST_SECRET,
        data_dir: dir,
        'mail:dev_auto_login:enabled': false,
        'log:level': 'info',
        'datastores:sql:url': `sqlite:${join(dir, 'svcmail.sqlite')}`,
        'mail:autodiscover:public_url': 'https://mail.example.test',
      }),
    );
    const child = spawn(process.execPath, [BIN, 'start', '--foreground', '--config', f], {
      cwd: ROOT,
      env: { ...process.env, SVCMAIL_CONFIG: '', NODE_ENV: 'test' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (code, signal) => r([code, signal])));
    const api = `http://${ports['listen:api']}`;
    const protocols = `http://${ports['listen:protocols']}`;
    try {
      // Four daemons start at once: on a loaded two-core machine that takes a while.
      const until = Date.now() + 150_000;
      const up = async (url: string) => {
        let r: Awaited<ReturnType<typeof request>> | null = null;
        while (Date.now() < until && r?.status !== 200 && child.exitCode === null) {
          r = await request(url).catch(() => null);
          if (r?.status !== 200) await new Promise((res) => setTimeout(res, 250));
        }
        return r;
      };
      const status = await up(`${protocols}/protocols/status`);
      expect(status, out).toMatchObject({
        status: 200,
        json: {
          status: 'ok',
          plugins: [
            { name: 'autodiscover', loaded: true, enabled: true },
            { name: 'eas', loaded: true, enabled: true },
          ],
        },
      });
      expect(out).toMatch(/\[protocols\s*\]/);
      expect((await up(`${api}/api/status`))?.status, out).toBe(200);
      const body = adRequest('alice@example.test');
      const direct = await request(`${protocols}/autodiscover/autodiscover.xml`, { method: 'POST', body });
      const via = await request(`${api}/autodiscover/autodiscover.xml`, { method: 'POST', body });
      expect(direct.status).toBe(200);
      // The shipped mobile-sync plugin is advertised at the path real clients hard-code.
      expect(direct.text).toContain('<Type>MobileSync</Type>');
      expect(direct.text).toContain('<Url>https://mail.example.test/Microsoft-Server-ActiveSync</Url>');
      expect(via.text).toBe(direct.text);
      expect((await request(`${api}/autodiscover/autodiscover.json/v1.0/a@example.test?Protocol=AutodiscoverV1`)).json).toEqual({
        Protocol: 'AutodiscoverV1',
        Url: 'https://mail.example.test/autodiscover/autodiscover.xml',
      });
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
    }
    const [code, signal] = await exited;
    expect({ code, signal }, out).toEqual({ code: 0, signal: null });
    expect(out).toMatch(/protocols daemon stopped/);
    await expect(fetch(`${protocols}/protocols/status`)).rejects.toThrow();
  }, 200_000);
});

describe.runIf(withOpenssl)('svcmail doctor: the protocols daemon and the Autodiscover probe', () => {
  let stack: Stack;
  let tls: Server;
  let dir: string;
  let conf: string;
  let cert: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-doctor-ad-'));
    cert = selfSignedCert(dir).cert;
    const port = await freePort();
    const publicUrl = `https://127.0.0.1:${port}`;
    stack = await startStack(sqlite, {
      values: { 'mail:autodiscover:public_url': publicUrl },
      plugins: [autodiscoverPlugin, testEas, testMapi],
    });
    await seed(stack);
    // TLS in front of the real protocols app, as nginx would be.
    const { readFileSync } = await import('node:fs');
    tls = createHttps({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(cert) }, stack.protocolsApp);
    await new Promise<void>((r) => tls.listen(port, '127.0.0.1', () => r()));
    conf = join(dir, 'svcmail.json');
    writeFileSync(
      conf,
      JSON.stringify({
        'auth:secret': TEST_SECRET,
        'listen:api': new URL(stack.api).host,
        'listen:protocols': new URL(stack.protocols).host,
        'mail:autodiscover:public_url': publicUrl,
        data_dir: dir,
      }),
    );
  }, 60_000);
  afterAll(async () => {
    tls?.close();
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Asynchronous: the servers it probes run in this process.
  const doctor = async (extraEnv: Record<string, string> = {}, set: string[] = []) => {
    // Only the daemons and Autodiscover: the checks under test.
    const skip = CHECK_IDS.filter((c) => c !== 'daemons' && c !== 'autodiscover').flatMap((c) => ['--skip', c]);
    const child = spawn(process.execPath, [BIN, '--config', conf, ...set.flatMap((x) => ['--set', x]), '--json', 'doctor', ...skip], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'test', SVCMAIL_CONFIG: '', ...extraEnv },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    if (!stdout) throw new Error(`doctor printed nothing (exit ${code}): ${stderr}`);
    const results = JSON.parse(stdout).results as Array<{ id: string; status: string; detail: string; fix?: string }>;
    return { code, byId: Object.fromEntries(results.map((x) => [x.id, x])) };
  };

  it('passes: the daemon answers its status, and both XML schemas and JSON v2 answer on the public URL', async () => {
    const { code, byId } = await doctor({ NODE_EXTRA_CA_CERTS: cert });
    expect(byId['daemon:protocols'], JSON.stringify(byId)).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/\/protocols\/status 200/),
    });
    expect(byId['autodiscover:mobilesync']).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/ActiveSync at https:\/\/127\.0\.0\.1:\d+\/Vendor-Server-ActiveSync/),
    });
    expect(byId['autodiscover:outlook']).toMatchObject({ status: 'ok', detail: expect.stringMatching(/mapiHttp at .*\/mapi\/emsmdb\//) });
    expect(byId['autodiscover:json']).toMatchObject({ status: 'ok', detail: expect.stringMatching(/AutodiscoverV1/) });
    expect(code).toBe(0);
  });

  it(
    'fails with a fix when the public URL does not answer or its certificate is not trusted, and when the daemon is down',
    { timeout: 60_000 },
    async () => {
      const untrusted = await doctor();
      expect(untrusted.byId['autodiscover:json']).toMatchObject({ status: 'fail', fix: expect.stringMatching(/TLS/) });
      expect(untrusted.code).toBe(1);
      const down = await doctor({ NODE_EXTRA_CA_CERTS: cert }, [
        `mail:autodiscover:public_url=https://127.0.0.1:${await freePort()}`,
        `listen:protocols=127.0.0.1:${await freePort()}`,
      ]);
      expect(down.byId['autodiscover:mobilesync']).toMatchObject({ status: 'fail', detail: expect.stringMatching(/ECONNREFUSED/) });
      expect(down.byId['daemon:protocols']).toMatchObject({ status: 'fail', fix: expect.stringMatching(/svcmail start protocols/) });
    },
  );

  it('skips the probe while mail:autodiscover:public_url is unset', async () => {
    const { byId } = await doctor({}, ['mail:autodiscover:public_url=']);
    expect(byId.autodiscover).toMatchObject({ status: 'skip', detail: expect.stringMatching(/advertises nothing/) });
  });
});
