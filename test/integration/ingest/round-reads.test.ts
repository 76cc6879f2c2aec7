// A scan round reads its mailboxes' settings once for all its entries (lib/ingest/round-reads.ts):
// the mailbox records, filter rules, out-of-office replies, Focused overrides and known
// correspondents, instead of once per entry. Delivery must decide exactly as with its own reads:
// rules, Focused/Other, out-of-office and the quota, which counts what the round itself files.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AutoReplyModel,
  CorrespondentModel,
  IngestEntryModel,
  OutboundHandoffModel,
  QuarantineModel,
  type IngestEntry,
} from '../../../lib/ingest/index.js';
import { readRound } from '../../../lib/ingest/round-reads.js';
import { runScanRound } from '../../../lib/jobs/index.js';
import { FilterRuleModel, FocusedOverrideModel, MailboxModel, MessageModel, type Message } from '../../../lib/mail/index.js';
import type { ModelDef, Store } from '../../../lib/storage/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { boundMember } from '../../helpers/proxy.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();
const SETTINGS = new Set([
  MailboxModel.name,
  AutoReplyModel.name,
  FocusedOverrideModel.name,
  CorrespondentModel.name,
  FilterRuleModel.name,
]);

/** The store, counting the reads of the mailbox settings made through it. */
function counting(store: Store, reads: Map<string, number>): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop !== 'repo') return boundMember(target, prop);
      return (model: ModelDef) => {
        const repo = target.repo(model);
        if (!SETTINGS.has(model.name)) return repo;
        return new Proxy(repo, {
          get(r, p) {
            if (p === 'get' || p === 'list' || p === 'findOne') reads.set(model.name, (reads.get(model.name) ?? 0) + 1);
            return boundMember(r, p);
          },
        });
      };
    },
  });
}

describe.each(backends)("a scan round reads the mailboxes' settings once ($name)", (backend) => {
  let f: IngestFixture;
  beforeAll(async () => {
    f = await ingestFixture(backend);
  }, 60_000);
  afterAll(async () => f?.close());

  it('twelve entries: one read of each kind, and every decision as with per-entry reads', async () => {
    const store = f.api.deps.store;
    const alice = f.users.aliceBox.uid;
    const bob = f.users.bobBox.uid;
    await store.repo(AutoReplyModel).create({ mailboxUid: bob, enabled: true, subject: 'Away', body: 'Back on Monday.' } as never);
    await store.repo(FocusedOverrideModel).create({ mailboxUid: alice, sender: '@news.example', classification: 'other' } as never);
    await store
      .repo(CorrespondentModel)
      .create({ mailboxUid: alice, address: 'friend@remote.example', messages: 1, lastAt: new Date() } as never);
    await store.repo(FilterRuleModel).create({
      mailboxUid: alice,
      name: 'read invoices',
      enabled: true,
      position: 0,
      match: 'all',
      conditions: [{ field: 'subject', op: 'contains', value: 'invoice' }],
      actions: [{ type: 'markRead' }],
      stop: false,
    } as never);
    const senders = ['friend@remote.example', 'letters@news.example', 'stranger@else.example'];
    for (let i = 0; i < 6; i++) {
      const from = senders[i % 3];
      const r = await f.deliver({
        from,
        to: ['alice@example.test', 'bob@example.test'],
        raw: message({ from, subject: i === 0 ? 'your invoice' : `note ${i}` }),
        tx: `round-reads-${backend.name}-${i}`,
      });
      expect(r.status).toBe(202);
    }
    const reads = new Map<string, number>();
    const w = f.worker({ scanners: 'clean' });
    const round = await runScanRound({ ...w, store: counting(store, reads) }, 'round-reads');
    expect(round).toMatchObject({ claimed: 12, finished: 12 });
    for (const name of [MailboxModel.name, AutoReplyModel.name, FocusedOverrideModel.name, CorrespondentModel.name])
      expect([name, reads.get(name) ?? 0]).toEqual([name, 1]);

    const mine = await store.repo<Message>(MessageModel).list({ filter: { mailboxUid: alice }, limit: 100 });
    const by = (from: string) => mine.filter((m) => m.fromAddress === from);
    expect(by('friend@remote.example').every((m) => m.focused === 'focused')).toBe(true); // a known correspondent
    expect(by('letters@news.example').every((m) => m.focused === 'other')).toBe(true); // the @domain override
    expect(mine.find((m) => m.subject === 'your invoice')).toMatchObject({ seen: true }); // the filter rule
    expect(mine.filter((m) => m.subject !== 'your invoice').every((m) => !m.seen)).toBe(true);
    // out-of-office: one reply per sender (three senders) from bob's mailbox
    const replies = await store
      .repo<{ kind: string; envelopeTo: string[] }>(OutboundHandoffModel)
      .list({ filter: { kind: 'auto-reply' }, limit: 100 });
    expect(replies.map((r) => r.envelopeTo[0]).sort()).toEqual([...senders].sort());
  });

  it('the quota counts what the round itself files: the copy that no longer fits is held', async () => {
    const boxes = f.api.deps.store.repo<{ quotaBytes: number; usedBytes: number }>(MailboxModel);
    const before = (await boxes.get(f.users.bobBox.uid))!;
    const raws = [0, 1, 2].map((i) => message({ subject: `fits ${i}`, body: 'x'.repeat(400) }));
    const sizes = raws.map((r) => Buffer.byteLength(r));
    await boxes.update(f.users.bobBox.uid, { quotaBytes: before.usedBytes + sizes[0] + sizes[1] + 10 });
    try {
      const txs = [];
      for (const [i, raw] of raws.entries()) {
        const r = await f.deliver({ to: ['bob@example.test'], raw, tx: `quota-round-${backend.name}-${i}` });
        expect(r.status).toBe(202);
        txs.push(r.body.transactionId as string);
      }
      expect((await runScanRound(f.worker({ scanners: 'clean' }), 'quota-round')).finished).toBe(3);
      const entries = f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
      const states = await Promise.all(txs.map(async (t) => (await entries.list({ filter: { transactionId: t } }))[0].state));
      expect(states.filter((s) => s === 'delivered')).toHaveLength(2);
      expect(states.filter((s) => s === 'quarantined')).toHaveLength(1);
      const held = (await entries.list({ filter: { transactionId: { $in: txs }, state: 'quarantined' } }))[0];
      expect(await f.api.deps.store.repo<{ reason: string }>(QuarantineModel).get(held.uid)).toMatchObject({ reason: 'over-quota' });
    } finally {
      await boxes.update(f.users.bobBox.uid, { quotaBytes: 0 });
    }
  });

  it('readRound: settings of mailboxes and senders it was not asked for are not there; reserve without a quota always fits', async () => {
    const reads = await readRound(f.api.deps, [{ mailboxUid: f.users.aliceBox.uid, sender: 'friend@remote.example' }]);
    expect(reads.mailbox(f.users.aliceBox.uid)).toMatchObject({ uid: f.users.aliceBox.uid });
    expect(reads.mailbox(f.users.bobBox.uid)).toBeNull();
    expect(reads.isCorrespondent(f.users.aliceBox.uid, 'friend@remote.example')).toBe(true);
    expect(reads.isCorrespondent(f.users.aliceBox.uid, 'stranger@else.example')).toBe(false);
    expect(reads.filterRules(f.users.aliceBox.uid).map((r) => (r as { name?: string }).name)).toEqual(['read invoices']);
    expect(reads.reserve(f.users.aliceBox.uid, 10 ** 12)).toBe(true);
  });
});
