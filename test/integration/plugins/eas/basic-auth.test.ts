// A phone signs in with an app password over HTTP Basic, as every real client does: to
// /Microsoft-Server-ActiveSync (any case), the username being the mailbox address, checked by the
// sign-in service (a double speaking its HTTP contract). A wrong password is refused with the realm;
// a request carrying a browser extension's Origin is not refused for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin, easPlugin } from '../../../../lib/plugins/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { startSigninDouble, type SigninDouble } from '../../../helpers/signin-double.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { Device, fh, kid, pv, textOf } from './_client.js';

const [sqlite] = await sqlBackends();
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;

describe('mobile sync with an app password over Basic', () => {
  let signin: SigninDouble;
  let stack: Stack;
  beforeAll(async () => {
    signin = await startSigninDouble({ users: { alice: { passwords: ['alice-app-pw'] } } });
    stack = await startStack(sqlite, {
      plugins: [autodiscoverPlugin, easPlugin],
      values: { 'mail:auth_server_url': signin.url, 'mail:basic_auth:realm': 'svcmail test' },
    });
    await seed(stack);
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await signin?.close();
  });

  it('the mailbox address as username resolves to its owner; the device provisions and syncs folders', async () => {
    const d = new Device(
      stack.protocols,
      basic('alice@example.test', 'alice-app-pw'),
      'BASIC1',
      'iPhone',
      '16.1',
      '/microsoft-server-activesync',
    );
    await d.provision(pv);
    const fs = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]), {
      headers: { origin: 'chrome-extension://abcdefghijklmnopabcdefghijklmnop' },
    });
    expect(fs.status).toBe(200);
    expect(textOf(fs.tree!, 'Status')).toBe('1');
    expect(kid(fs.tree!, 'Changes')).toBeDefined();
    const devices = await stack.call('GET', '/api/mail/devices', await stack.token({ uid: 'alice' }));
    expect(devices.body.map((x: { deviceId: string; userUid: string }) => [x.deviceId, x.userUid])).toEqual([['BASIC1', 'alice']]);
  });

  it('a wrong app password is refused with the realm and nothing is stored', async () => {
    const d = new Device(stack.protocols, basic('alice@example.test', 'wrong'), 'BASIC2');
    const r = await d.send('Provision', pv('Provision', []));
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/Basic realm="svcmail test"/);
    const devices = await stack.call('GET', '/api/mail/devices', await stack.token({ uid: 'root', roles: ['admin'], elevated: true }));
    expect(devices.body.map((x: { deviceId: string }) => x.deviceId)).not.toContain('BASIC2');
  });
});
