// The scan round writes its filed copies' full-text documents in the commit that releases its
// entries (lib/jobs/scan.ts): one full-text flush per round instead of one per filing commit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScanRound, writeRoundTexts } from '../../../lib/jobs/index.js';
import { IngestEntryModel } from '../../../lib/ingest/index.js';
import { FolderModel, MessageModel, type Folder, type Message } from '../../../lib/mail/index.js';
import type { Store } from '../../../lib/storage/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { boundMember } from '../../helpers/proxy.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();

describe.each(backends)('full-text documents of a scan round ($name)', (backend) => {
  let f: IngestFixture;
  beforeAll(async () => {
    f = await ingestFixture(backend);
  }, 60_000);
  afterAll(async () => {
    await f?.close();
  });

  it('a copy filed by a round is found by search; a copy deleted before the round wrote its document gets none', async () => {
    const alice = f.users.aliceBox.uid;
    for (const [i, word] of ['quokka', 'wombat'].entries()) {
      const r = await f.deliver({
        to: ['alice@example.test'],
        raw: message({ subject: `${word} report`, to: 'alice@example.test' }),
        tx: `round-text-${backend.name}-${i}`,
      });
      expect(r.status).toBe(202);
    }
    const round = await runScanRound(f.worker({ scanners: 'clean' }), 'round-text');
    expect(round.finished).toBe(2);
    const messages = f.api.deps.store.repo<Message>(MessageModel);
    const [gone] = await messages.search('quokka', { filter: { mailboxUid: alice }, limit: 5 });
    const [kept] = await messages.search('wombat', { filter: { mailboxUid: alice }, limit: 5 });
    expect(gone && kept).toBeTruthy();

    // One copy is deleted after it was filed, before a round writes documents for both.
    expect(await messages.delete(gone.uid)).toBe(true);
    await f.api.deps.store.transaction((tx) =>
      writeRoundTexts(
        tx,
        new Map([
          [gone.uid, 'platypus'],
          [kept.uid, 'platypus'],
        ]),
      ),
    );
    expect((await messages.search('platypus', { filter: { mailboxUid: alice }, limit: 5 })).map((m) => m.uid)).toEqual([kept.uid]);
    // No document was left behind for the deleted uid: a record made again under it is not found by it.
    const { uid, version, createdAt, updatedAt, ...fields } = gone; // eslint-disable-line @typescript-eslint/no-unused-vars
    await messages.create({ ...fields, uid, ingestKey: null });
    expect((await messages.search('platypus', { filter: { mailboxUid: alice }, limit: 5 })).map((m) => m.uid)).toEqual([kept.uid]);
  });

  it("sends a round's events only after the synchronous commit that releases its entries (its filings commit asynchronously)", async () => {
    const w = f.worker({ scanners: 'clean' });
    // The round's closing transaction is the one that releases entries: note when it has committed.
    let releaseCommitted = false;
    const store = new Proxy(w.store, {
      get(target, prop) {
        if (prop !== 'transaction') return boundMember(target, prop);
        return <R>(fn: (tx: Store) => Promise<R>, opts?: { syncCommit?: boolean }) => {
          let releases = false;
          const watched = (tx: Store) =>
            fn(
              new Proxy(tx, {
                get(t, p) {
                  if (p !== 'repo') return boundMember(t, p);
                  return (model: typeof IngestEntryModel) => {
                    if (model === IngestEntryModel) releases = true;
                    return t.repo(model);
                  };
                },
              }),
            );
          return target.transaction(watched, opts).then((r) => {
            if (releases && opts?.syncCommit !== false) releaseCommitted = true;
            return r;
          });
        };
      },
    });
    const inbox = (await f.api.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid: f.users.bobBox.uid, role: 'inbox' }))!;
    const seen: Array<[string, boolean]> = [];
    const offMail = f.api.deps.events.onMail(
      'message.delivered',
      (_kind, e) => void (e.mailboxUid === f.users.bobBox.uid && seen.push(['delivered', releaseCommitted])),
    );
    const offFolder = f.api.deps.events.subscribe(inbox.uid, (_channel, e) => void seen.push([`${e.type}.${e.action}`, releaseCommitted]));
    try {
      for (let i = 0; i < 3; i++)
        expect(
          (
            await f.deliver({
              to: ['bob@example.test'],
              raw: message({ subject: `late news ${i}`, to: 'bob@example.test' }),
              tx: `round-events-${backend.name}-${i}`,
            })
          ).status,
        ).toBe(202);
      expect((await runScanRound({ ...w, store }, 'round-events')).finished).toBe(3);
      // the mail event stream hands events to its consumers asynchronously
      for (let i = 0; i < 100 && seen.filter(([k]) => k === 'delivered').length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      offMail();
      offFolder();
    }
    expect(seen.filter(([k]) => k === 'delivered')).toHaveLength(3);
    expect(seen.filter(([k]) => k === 'message.create')).toHaveLength(3);
    expect(seen.every(([, after]) => after)).toBe(true);
    expect(
      (await f.api.deps.store.repo<Message>(MessageModel).list({ filter: { mailboxUid: f.users.bobBox.uid } }))
        .map((m) => m.subject)
        .sort(),
    ).toEqual(['late news 0', 'late news 1', 'late news 2']);
  });
});
