// /api/mail/devices: who sees which device, remote wipe and unblock (trusted role, fresh elevation,
// audited) as the device lives them, the owner removing a device, `inspect` explaining why a
// device lacks a message without reading it, and the cleanup of idle devices.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEntryModel, type AuditEntry } from '../../../../lib/audit/index.js';
import { autodiscoverPlugin, EasCollectionModel, EasDeviceModel, easPlugin, removeIdleDevices } from '../../../../lib/plugins/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { deliverRaw } from '../../../helpers/messages.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { as, Device, fh, kid, kids, pv, textOf } from './_client.js';

const backends = await sqlBackends();

const mail = (subject: string, date = new Date()) =>
  `From: carol@example.net\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nDate: ${date.toUTCString()}\r\nMessage-ID: <${subject.replace(/\W/g, '')}-${Date.now()}@x>\r\n\r\nsecret body ${subject}\r\n`;

describe.each(backends)('/api/mail/devices ($name)', (backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let phone: Device;
  let uid = '';
  let inbox = '';
  let stale = '';
  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [autodiscoverPlugin, easPlugin] });
    s = await seed(stack);
    stale = await stack.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) });
    phone = new Device(stack.protocols, `Bearer ${s.alice}`, 'ALICEPHONE', 'iPhone', '16.1');
    await phone.provision(pv);
    const folders = await phone.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    inbox = textOf(
      kids(kid(folders.tree!, 'Changes'), 'Add').find((a) => textOf(a, 'Type') === '2'),
      'ServerId',
    )!;
    const sync = (key: number) =>
      phone.send('Sync', as('Sync', [as('Collections', [as('Collection', [as('SyncKey', key), as('CollectionId', inbox)])])]));
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail('held one'));
    await sync(0);
    await sync(1);
    uid = (await stack.deps.store.repo(EasDeviceModel).findOne({ deviceId: 'ALICEPHONE' }))!.uid;
  }, 60_000);
  afterAll(async () => stack?.close());

  it('the owner sees their device with its folders; another user sees none; an elevated administrator sees all', async () => {
    const own = await stack.call('GET', '/api/mail/devices', s.alice);
    expect(own.status).toBe(200);
    expect(own.body).toHaveLength(1);
    expect(own.body[0]).toMatchObject({
      uid,
      deviceId: 'ALICEPHONE',
      deviceType: 'iPhone',
      protocolVersion: '16.1',
      provisioned: true,
      wipe: 'none',
      blocked: false,
      folders: [{ folderUid: inbox, folderName: 'Inbox', syncKey: 2, items: 1, complete: true }],
    });
    expect(JSON.stringify(own.body)).not.toMatch(/policyKey/);
    expect((await stack.call('GET', '/api/mail/devices', s.bob)).body).toEqual([]);
    expect((await stack.call('GET', `/api/mail/devices/${uid}`, s.bob)).status).toBe(404);
    expect((await stack.call('GET', '/api/mail/devices', s.admin)).body.map((d: { uid: string }) => d.uid)).toEqual([uid]);
    expect((await stack.call('GET', '/api/mail/devices?nope=1', s.alice)).status).toBe(400);
  });

  it('inspect says why a device lacks a message, from sync state only', async () => {
    const before = await stack.call('GET', `/api/mail/devices/${uid}/inspect`, s.alice);
    expect(before.body.message).toBeNull();
    const late = await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail('late one'));
    const r = await stack.call('GET', `/api/mail/devices/${uid}/inspect?message=${late.uid}`, s.admin);
    expect(r.status).toBe(200);
    expect(r.body.message).toMatchObject({ folderSynced: true, inFilterWindow: true, heldByDevice: false });
    expect(r.body.message.verdict).toMatch(/after the device last synced/);
    expect(JSON.stringify(r.body)).not.toMatch(/late one|secret body/);
    const held = (await stack.call('GET', `/api/mail/messages?folderUid=${inbox}`, s.alice)).body.find(
      (m: { subject: string }) => m.subject === 'held one',
    );
    const h = await stack.call('GET', `/api/mail/devices/${uid}/inspect?message=${held.uid}`, s.alice);
    expect(h.body.message).toMatchObject({ heldByDevice: true, verdict: 'the device holds this message as it is now' });
    expect((await stack.call('GET', `/api/mail/devices/${uid}/inspect?message=${held.uid}`, s.bob)).status).toBe(404);
  });

  it('remote wipe needs a trusted role with fresh elevation; the device is wiped at its next sync, then blocked until unblocked', async () => {
    expect((await stack.call('POST', `/api/mail/devices/${uid}/remote-wipe`, s.alice, {})).body).toMatchObject({ code: 'api-103' });
    expect((await stack.call('POST', `/api/mail/devices/${uid}/remote-wipe`, stale, {})).body).toMatchObject({ code: 'api-104' });
    expect((await stack.call('POST', `/api/mail/devices/${uid}/remote-wipe`, s.admin, { accountOnly: 'yes' })).status).toBe(400);
    const w = await stack.call('POST', `/api/mail/devices/${uid}/remote-wipe`, s.admin, { accountOnly: true });
    expect(w.status).toBe(200);
    expect(w.body.wipe).toBe('account-only');
    // The device: any command is told to provision (140); Provision delivers the wipe; it acknowledges.
    const sync = await phone.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    expect(textOf(sync.tree!, 'Status')).toBe('140');
    const p = await phone.send(
      'Provision',
      pv('Provision', [pv('Policies', [pv('Policy', [pv('PolicyType', 'MS-EAS-Provisioning-WBXML')])])]),
    );
    expect(kid(p.tree!, 'AccountOnlyRemoteWipe')).toBeDefined();
    await phone.send('Provision', pv('Provision', [pv('AccountOnlyRemoteWipe', [pv('Status', '1')])]));
    expect((await stack.call('GET', `/api/mail/devices/${uid}`, s.alice)).body).toMatchObject({
      wipe: 'wiped',
      blocked: true,
      provisioned: false,
    });
    expect(textOf((await phone.send('Provision', pv('Provision', []))).tree!, 'Status')).toBe('129');

    const u = await stack.call('POST', `/api/mail/devices/${uid}/unblock`, s.admin, {});
    expect(u.body).toMatchObject({ blocked: false, wipe: 'none', provisioned: false, folders: [] });
    phone.policyKey = 0;
    await phone.provision(pv);
    expect(textOf((await phone.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]))).tree!, 'Status')).toBe('1');
    const audit = await stack.deps.store
      .repo<AuditEntry>(AuditEntryModel)
      .list({ filter: { resource: 'devices', resourceUid: uid }, sort: [{ field: 'createdAt', dir: 'asc' }], limit: 10 });
    expect(audit.map((a) => [a.action, a.actor])).toEqual([
      ['devices.remote-wipe', 'root'],
      ['devices.unblock', 'root'],
    ]);
  });

  it('the owner removes their device with its sync state; another user cannot', async () => {
    expect((await stack.call('DELETE', `/api/mail/devices/${uid}`, s.bob)).status).toBe(404);
    expect((await stack.call('DELETE', `/api/mail/devices/${uid}`, s.alice)).status).toBe(204);
    expect(await stack.deps.store.repo(EasDeviceModel).get(uid)).toBeNull();
    expect(await stack.deps.store.repo(EasCollectionModel).count({ deviceUid: uid })).toBe(0);
  });

  it('the cleanup job forgets devices idle beyond the retention, and keeps the others', async () => {
    const fresh = new Device(stack.protocols, `Bearer ${s.bob}`, 'BOBPHONE');
    await fresh.provision(pv);
    const bobDevice = (await stack.deps.store.repo(EasDeviceModel).findOne({ deviceId: 'BOBPHONE' }))!;
    expect(await removeIdleDevices(stack.deps, Date.now() - 86_400_000)).toEqual({ removed: 0 });
    expect(await removeIdleDevices(stack.deps, Date.now() + 1000)).toEqual({ removed: 1 });
    expect(await stack.deps.store.repo(EasDeviceModel).get(bobDevice.uid)).toBeNull();
  });
});
