// The scan round writes its filed copies' full-text documents in the commit that releases its
// entries (lib/jobs/scan.ts): one full-text flush per round instead of one per filing commit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScanRound, writeRoundTexts } from '../../../lib/jobs/index.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await sqlBackends();

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
      const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: `${word} report`, to: 'alice@example.test' }), tx: `round-text-${backend.name}-${i}` });
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
    await f.api.deps.store.transaction((tx) => writeRoundTexts(tx, new Map([[gone.uid, 'platypus'], [kept.uid, 'platypus']])));
    expect((await messages.search('platypus', { filter: { mailboxUid: alice }, limit: 5 })).map((m) => m.uid)).toEqual([kept.uid]);
    // No document was left behind for the deleted uid: a record made again under it is not found by it.
    const { uid, version, createdAt, updatedAt, ...fields } = gone; // eslint-disable-line @typescript-eslint/no-unused-vars
    await messages.create({ ...fields, uid, ingestKey: null });
    expect((await messages.search('platypus', { filter: { mailboxUid: alice }, limit: 5 })).map((m) => m.uid)).toEqual([kept.uid]);
  });
});
