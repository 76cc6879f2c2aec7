// svcmail doctor's mobile-sync probe against the public URL (TLS in front of the real protocols
// app, as nginx would be): OPTIONS at /Microsoft-Server-ActiveSync, then with the test sign-in's app
// password a synthetic device's Provision and FolderSync; each failure says what to do.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttps, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { selfSignedCert } from '../../../helpers/tls.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_IDS } from '../../../../lib/setup/doctor-ids/index.js';
import { autodiscoverPlugin, easPlugin, EasDeviceModel } from '../../../../lib/plugins/index.js';
import { TEST_SECRET } from '../../../helpers/api.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { requirePrograms } from '../../../helpers/peers.js';
import { startSigninDouble, type SigninDouble } from '../../../helpers/signin-double.js';
import { freePort, seed, startStack, type Stack } from '../_stack.js';

const withOpenssl = requirePrograms('openssl');
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const [sqlite] = await sqlBackends();

describe.runIf(withOpenssl)('svcmail doctor: the mobile-sync probe', () => {
  let stack: Stack;
  let signin: SigninDouble;
  let tls: Server;
  let dir: string;
  let conf: string;
  let cert: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-doctor-eas-'));
    cert = selfSignedCert(dir).cert;
    signin = await startSigninDouble({ users: { alice: { passwords: ['alice-app-pw'] } } });
    const port = await freePort();
    const publicUrl = `https://127.0.0.1:${port}`;
    stack = await startStack(sqlite, {
      values: { 'mail:autodiscover:public_url': publicUrl, 'mail:auth_server_url': signin.url },
      plugins: [autodiscoverPlugin, easPlugin],
    });
    await seed(stack);
    tls = createHttps({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(cert) }, stack.protocolsApp);
    await new Promise<void>((r) => tls.listen(port, '127.0.0.1', () => r()));
    conf = join(dir, 'svcmail.json');
    writeFileSync(conf, JSON.stringify({ 'auth:secret': TEST_SECRET, 'mail:autodiscover:public_url': publicUrl, data_dir: dir }));
  }, 60_000);
  afterAll(async () => {
    tls?.close();
    await stack?.close();
    await signin?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const doctor = async (args: string[] = []) => {
    const skip = CHECK_IDS.filter((c) => c !== 'activesync').flatMap((c) => ['--skip', c]);
    const child = spawn(process.execPath, [join(ROOT, 'bin/svcmail.js'), '--config', conf, '--json', 'doctor', ...skip, ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'test', SVCMAIL_CONFIG: '', NODE_EXTRA_CA_CERTS: cert },
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    const results = JSON.parse(stdout).results as Array<{ id: string; status: string; detail: string; fix?: string }>;
    return { code, byId: Object.fromEntries(results.map((x) => [x.id, x])) };
  };

  it('OPTIONS answers; without credentials the device session is skipped with what to give', async () => {
    const { code, byId } = await doctor();
    expect(byId.activesync).toMatchObject({ status: 'ok', detail: 'versions 14.0,14.1,16.0,16.1' });
    expect(byId['activesync:foldersync']).toMatchObject({ status: 'skip', detail: expect.stringMatching(/--signin-user/) });
    expect(code).toBe(0);
  });

  it('with an app password, a synthetic device provisions and lists the folders; a wrong one fails with a fix', async () => {
    const good = await doctor(['--signin-user', 'alice@example.test', '--signin-password', 'alice-app-pw']);
    expect(good.byId['activesync:foldersync']).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/svcmaildoctor provisioned, \d+ folders listed/),
    });
    expect(await stack.deps.store.repo(EasDeviceModel).count({ deviceId: 'svcmaildoctor' })).toBe(1);
    await doctor(['--signin-user', 'alice@example.test', '--signin-password', 'alice-app-pw']);
    expect(await stack.deps.store.repo(EasDeviceModel).count({ deviceId: 'svcmaildoctor' })).toBe(1); // reused, not piled up
    const bad = await doctor(['--signin-user', 'alice@example.test', '--signin-password', 'nope']);
    expect(bad.byId['activesync:foldersync']).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/HTTP 401/),
      fix: expect.any(String),
    });
    expect(bad.code).toBe(1);
  });
});
