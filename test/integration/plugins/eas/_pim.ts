// The fixture of the contacts, calendar and tasks tests (pim.test.ts, pim-calendar.test.ts): the
// real protocols app on one SQL engine, alice with two task lists (Errands, the default, and Work),
// a 14.1 and a 16.1 device, both past FolderSync; Sync rounds that keep their keys; API calls as alice.
import { expect } from 'vitest';
import { autodiscoverPlugin, easPlugin } from '../../../../lib/plugins/index.js';
import type { Backend } from '../../../helpers/databases.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { as, asb, Device, fh, kid, kids, pv, textOf } from './_client.js';

export type El = ReturnType<typeof as>;
export const collectionOf = (tree: El | null) => kid(kid(tree!, 'Collections'), 'Collection')!;
export const commandsOf = (tree: El | null) => kid(collectionOf(tree), 'Commands')?.children ?? [];
export const responsesOf = (tree: El | null) => kid(collectionOf(tree), 'Responses')?.children ?? [];
/** A device's Add of a new item, and its Change of one it holds. */
export const addItem = (clientId: string, data: El[]) => as('Add', [as('ClientId', clientId), as('ApplicationData', data)]);
export const changeItem = (serverId: string, data: El[]) => as('Change', [as('ServerId', serverId), as('ApplicationData', data)]);

export interface PimFixture {
  stack: Stack;
  s: Awaited<ReturnType<typeof seed>>;
  /** Every device made, for the decoders at the end. */
  devices: Device[];
  d: Device;
  d16: Device;
  /** The folders FolderSync gave `d`, by display name. */
  folders: Record<string, { id: string; type: string }>;
  /** `d`'s first FolderSync answer. */
  folderSync: El;
  /** Each device's sync key per collection (`<deviceId>:<collectionId>`). */
  keys: Record<string, number>;
  /** The Errands list (the default Tasks folder). */
  listUid: string;
  device(id: string, token: string, version?: string): Promise<Device>;
  /** One Sync round of a collection; keeps its key. */
  sync(dev: Device, folder: string, opts?: { commands?: El[]; filterType?: string; tag?: string; bodyType?: string }): Promise<El | null>;
  /** A call to the API as alice, expected to succeed. */
  api(method: string, path: string, body?: unknown): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  close(): Promise<void>;
}

export async function pimFixture(backend: Backend): Promise<PimFixture> {
  const stack = await startStack(backend, { plugins: [autodiscoverPlugin, easPlugin] });
  const s = await seed(stack);
  const devices: Device[] = [];
  const keys: Record<string, number> = {};
  const api: PimFixture['api'] = async (method, path, body) => {
    const r = await stack.call(method, path, s.alice, body);
    expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
    return r.body;
  };
  const device: PimFixture['device'] = async (id, token, version = '14.1') => {
    const d = new Device(stack.protocols, `Bearer ${token}`, id, 'iPhone', version);
    devices.push(d);
    await d.provision(pv);
    return d;
  };
  const sync: PimFixture['sync'] = async (dev, folder, opts = {}) => {
    const k = `${dev.id}:${folder}`;
    const r = await dev.send(
      'Sync',
      as('Sync', [
        as('Collections', [
          as('Collection', [
            as('SyncKey', keys[k] ?? 0),
            as('CollectionId', folder),
            as('DeletesAsMoves', '1'),
            as('GetChanges', '1'),
            as('WindowSize', 50),
            as('Options', [
              ...(opts.filterType ? [as('FilterType', opts.filterType)] : []),
              asb('BodyPreference', [asb('Type', opts.bodyType ?? '1'), asb('TruncationSize', '200')]),
            ]),
            ...(opts.commands?.length ? [as('Commands', opts.commands)] : []),
          ]),
        ]),
      ]),
    );
    expect(r.status).toBe(200);
    const c = collectionOf(r.tree);
    if (textOf(c, 'Status') === '1') keys[k] = Number(textOf(c, 'SyncKey'));
    return r.tree;
  };
  const listUid = (await api('POST', '/api/mail/task-lists', { mailboxUid: s.aliceBox, name: 'Errands' })).uid as string;
  await api('POST', '/api/mail/task-lists', { mailboxUid: s.aliceBox, name: 'Work' });
  const d = await device('PIM1', s.alice);
  const d16 = await device('PIM16', s.alice, '16.1');
  const r = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
  const folders: PimFixture['folders'] = {};
  for (const a of kids(kid(r.tree!, 'Changes'), 'Add'))
    folders[textOf(a, 'DisplayName')!] = { id: textOf(a, 'ServerId')!, type: textOf(a, 'Type')! };
  await d16.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
  return { stack, s, devices, d, d16, folders, folderSync: r.tree!, keys, listUid, device, sync, api, close: () => stack.close() };
}
