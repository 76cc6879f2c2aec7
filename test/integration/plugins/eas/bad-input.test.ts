// Bad input to every command: truncated and malformed WBXML, unknown code pages, well-formed
// documents of the wrong shape, oversized opaque data. Each gets the documented answer (400 api-106
// for what is not WBXML, the command's own Status for the wrong shape, 413 past the size limit) —
// never a 500 — and the mailbox and the device's sync state are as they were.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin, EasDeviceModel, easPlugin } from '../../../../lib/plugins/index.js';
import { COMMANDS } from '../../../../lib/plugins/eas/commands.js';
import { encode, pageByName } from '../../../../lib/plugins/eas/wbxml/index.js';
import { MessageModel } from '../../../../lib/mail/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { deliverRaw } from '../../../helpers/messages.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { as, Device, el, fh, kid, kids, pv, textOf } from './_client.js';

const [sqlite] = await sqlBackends();

describe('bad input to the mobile-sync commands', () => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let d: Device;
  let inbox = '';
  /** What bad input must never change: the mailbox, and the devices' standing (policy, wipe, block). */
  const snapshot = async () => ({
    devices: (await stack.deps.store.repo<Record<string, unknown>>(EasDeviceModel).list({ limit: 100 })).map((x) => [
      x.uid,
      x.policyKey,
      x.wipe,
      x.blocked,
    ]),
    messages: (await stack.deps.store.repo<Record<string, unknown>>(MessageModel).list({ limit: 100 })).map((m) => [
      m.uid,
      m.folderUid,
      m.version,
    ]),
  });
  beforeAll(async () => {
    stack = await startStack(sqlite, { plugins: [autodiscoverPlugin, easPlugin], values: { 'mail:eas:max_request_bytes': 256 * 1024 } });
    s = await seed(stack);
    await deliverRaw(
      { deps: stack.deps } as never,
      s.aliceBox,
      'From: c@example.net\r\nTo: alice@example.test\r\nSubject: keep me\r\n\r\nbody\r\n',
    );
    d = new Device(stack.protocols, `Bearer ${s.alice}`, 'BADINPUT1');
    await d.provision(pv);
    const fs = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    inbox = textOf(
      kids(kid(fs.tree!, 'Changes'), 'Add').find((a) => textOf(a, 'Type') === '2'),
      'ServerId',
    )!;
    const sync = (key: number) =>
      d.send('Sync', as('Sync', [as('Collections', [as('Collection', [as('SyncKey', key), as('CollectionId', inbox)])])]));
    await sync(0);
    await sync(1);
  }, 60_000);
  afterAll(async () => stack?.close());

  it('random and mutated bytes to every command: 400 or a Status, never a 500, nothing changed', async () => {
    const before = await snapshot();
    const valid = encode(as('Sync', [as('Collections', [as('Collection', [as('SyncKey', '2'), as('CollectionId', inbox)])])]));
    const bodies = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 200 }),
      // A real document cut short, or with one byte changed.
      fc.integer({ min: 1, max: valid.length - 1 }).map((n) => valid.subarray(0, n)),
      fc.tuple(fc.integer({ min: 4, max: valid.length - 1 }), fc.integer({ min: 0, max: 255 })).map(([i, b]) => {
        const copy = Buffer.from(valid);
        copy[i] = b;
        return copy;
      }),
    );
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(COMMANDS).filter((c) => c !== 'Provision')), bodies, async (cmd, body) => {
        const r = await d.send(cmd, null, { raw: Buffer.from(body) });
        seen.add(r.status);
        expect(r.status, `${cmd} answered ${r.status} ${r.text}`).not.toBe(500);
        if (r.status === 400) expect(JSON.parse(r.text)).toMatchObject({ code: 'api-106', status: 400 });
      }),
      { numRuns: Number(process.env.EAS_FUZZ_RUNS ?? 150) },
    );
    expect(seen.has(400)).toBe(true);
    expect(await snapshot()).toEqual(before);
  }, 120_000);

  it('well-formed documents of each command with random elements of its pages: never a 500, nothing changed', async () => {
    const before = await snapshot();
    const pages = [
      'AirSync',
      'AirSyncBase',
      'Email',
      'FolderHierarchy',
      'Ping',
      'Provision',
      'Settings',
      'ItemOperations',
      'Move',
      'Search',
      'GetItemEstimate',
      'ComposeMail',
      'MeetingResponse',
      'ResolveRecipients',
      'Contacts',
      'Calendar',
      'Tasks',
    ] as const;
    const tagOf = fc
      .constantFrom(...pages)
      .chain((page) => fc.constantFrom(...[...pageByName(page)!.tags.values()]).map((tag) => ({ page, tag })));
    const leaf = fc.oneof(fc.constant(''), fc.string({ maxLength: 12 }), fc.constantFrom('0', '1', '2', '99999999999', inbox, '-1'));
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.tuple(tagOf, leaf).map(([t, text]) => el(t.page, t.tag, text)),
        fc.tuple(tagOf, fc.array(tie('tree'), { maxLength: 4 })).map(([t, kids]) => el(t.page, t.tag, kids as ReturnType<typeof el>[])),
      ),
    }));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.values(COMMANDS).filter((c) => c.root.tag !== 'Provision')),
        fc.array(tree, { maxLength: 4 }),
        async (cmd, kids) => {
          const [name] = Object.entries(COMMANDS).find(([, c]) => c === cmd)!;
          const r = await d.send(name, el(cmd.root.page, cmd.root.tag, kids as ReturnType<typeof el>[]));
          expect(r.status, `${name} answered ${r.status} ${r.text}`).not.toBe(500);
        },
      ),
      { numRuns: Number(process.env.EAS_FUZZ_RUNS ?? 150) },
    );
    expect(await snapshot()).toEqual(before);
  }, 120_000);

  it('unknown code pages and the wrong document shape answer a Status; opaque data past the limit 413', async () => {
    const unknownPage = Buffer.from([0x03, 0x01, 0x6a, 0x00, 0x00, 0x7f, 0x45, 0x01]);
    expect((await d.send('Sync', null, { raw: unknownPage })).status).toBe(400);
    // Well-formed WBXML, the wrong root for the command.
    const wrong = await d.send('Sync', fh('FolderSync', [fh('SyncKey', '0')]));
    expect(wrong.status).toBe(200);
    expect(textOf(wrong.tree!, 'Status')).toBe('103'); // InvalidXML: not a Sync request
    expect(wrong.tree!.tag).toBe('Sync');
    const noKey = await d.send('FolderSync', fh('FolderSync', []));
    expect(textOf(noKey.tree!, 'Status')).toBe('10');
    const huge = encode(
      el('ComposeMail', 'SendMail', [el('ComposeMail', 'ClientId', 'x'), el('ComposeMail', 'Mime', Buffer.alloc(300 * 1024, 0x41))]),
    );
    const r = await d.send('SendMail', null, { raw: huge });
    expect(r.status).toBe(413);
    expect(JSON.parse(r.text)).toMatchObject({ code: 'api-110' });
  });
});
