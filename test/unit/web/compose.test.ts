// Compose state logic: address fields parsed as people type them (web/src/mail/compose/addresses.ts)
// and drafts saved as they type (saver.ts): one save at a time, each naming the draft the last one
// made, a failed save kept for the next try, and uploads queued behind the saves.
import { describe, expect, it, vi } from 'vitest';
import {
  completeEntry,
  entries,
  entryAt,
  formatRecipient,
  parseRecipients,
  replyAllRecipients,
} from '../../../web/src/mail/compose/addresses.js';
import { DraftSaver, type SaveState } from '../../../web/src/mail/compose/saver.js';

describe('address fields', () => {
  it('splits on commas and semicolons outside quoted names and angle brackets', () => {
    expect(entries('a@x.test, "Doe, Jane" <jane@x.test>; b@x.test,, ')).toEqual(['a@x.test', '"Doe, Jane" <jane@x.test>', 'b@x.test']);
    expect(entries('"a \\" ; b" <q@x.test>')).toEqual(['"a \\" ; b" <q@x.test>']);
  });

  it('answers recipients once each and names what is not an address', () => {
    const r = parseRecipients('Jane Doe <jane@x.test>, bob@x.test; JANE@x.test, bob, "Doe, J" <j@x.test>, a@b');
    expect(r.recipients).toEqual([
      { address: 'jane@x.test', name: 'Jane Doe' },
      { address: 'bob@x.test', name: '' },
      { address: 'j@x.test', name: 'Doe, J' },
    ]);
    expect(r.invalid).toEqual(['bob', 'a@b']);
    expect(parseRecipients('  ')).toEqual({ recipients: [], invalid: [] });
  });

  it('writes a recipient back so that it parses to the same thing', () => {
    for (const r of [
      { address: 'a@x.test', name: '' },
      { address: 'a@x.test', name: 'Ann Lee' },
      { address: 'a@x.test', name: 'Lee, Ann' },
      { address: 'a@x.test', name: 'Ann "the" Lee; <x>' },
    ])
      expect(parseRecipients(formatRecipient(r)).recipients).toEqual([r]);
  });

  it('finds the entry under the caret and replaces it with a chosen suggestion', () => {
    const v = 'ann@x.test, bo';
    expect(entryAt(v, v.length)).toEqual({ start: 11, end: 14, text: 'bo' });
    expect(entryAt(v, 3).text).toBe('ann@x.test');
    const done = completeEntry(v, v.length, { address: 'bob@x.test', name: 'Bob' });
    expect(done).toEqual({ value: 'ann@x.test, Bob <bob@x.test>, ', caret: 30 });
    // in the middle: the rest of the field is kept after it
    const mid = completeEntry('jo, cat@x.test', 2, { address: 'joe@x.test', name: '' });
    expect(mid.value).toBe('joe@x.test, cat@x.test');
    expect(mid.caret).toBe('joe@x.test, '.length);
  });

  it('reply all: the sender, a copy to the others, never the user; a message the user sent goes to its recipients again', () => {
    const carol = { address: 'carol@x.test', name: 'Carol' };
    const m = {
      from: carol,
      to: [
        { address: 'Me@x.test', name: '' },
        { address: 'dan@x.test', name: 'Dan' },
      ],
      cc: [carol, { address: 'me-alias@x.test', name: '' }, { address: 'eve@x.test', name: '' }],
    };
    expect(replyAllRecipients(m, ['me@x.test', 'me-alias@x.test'])).toEqual({
      to: [carol],
      cc: [
        { address: 'dan@x.test', name: 'Dan' },
        { address: 'eve@x.test', name: '' },
      ],
    });
    const mine = { from: { address: 'me@x.test', name: '' }, to: [carol], cc: [{ address: 'eve@x.test', name: '' }] };
    expect(replyAllRecipients(mine, ['me@x.test'])).toEqual({ to: [carol], cc: [{ address: 'eve@x.test', name: '' }] });
  });
});

interface Draft {
  uid: string;
  version: number;
  body: string;
}

/** A saver over an in-memory server that answers each save with a new uid, as PUT /api/mail/compose/:id does. */
function harness(opts: { fail?: (n: number) => boolean; delayMs?: number } = {}) {
  let n = 0;
  const calls: string[] = [];
  const states: SaveState[] = [];
  let inFlight = 0;
  let most = 0;
  const answer = async (what: string, body: string): Promise<Draft> => {
    calls.push(what);
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((r) => setTimeout(r, opts.delayMs ?? 5));
    inFlight--;
    n++;
    if (opts.fail?.(n)) throw new Error('server down');
    return { uid: `d${n}`, version: 1, body };
  };
  const saver = new DraftSaver<string, Draft>(
    { create: (body) => answer(`create ${body}`, body), update: (old, body) => answer(`update ${old.uid} ${body}`, body) },
    null,
    (state) => states.push(state),
    20,
  );
  return { saver, calls, states, most: () => most };
}

describe('DraftSaver', () => {
  it('saves once the typing pauses: the last text only, created then replaced by the uid each answer names', async () => {
    const h = harness();
    h.saver.change('H');
    h.saver.change('He');
    h.saver.change('Hello');
    await vi.waitFor(() => expect(h.saver.status).toBe('saved'));
    expect(h.calls).toEqual(['create Hello']);
    h.saver.change('Hello!');
    expect(await h.saver.flush()).toMatchObject({ uid: 'd2', body: 'Hello!' });
    expect(h.calls).toEqual(['create Hello', 'update d1 Hello!']);
    expect(h.states.slice(0, 3)).toEqual(['unsaved', 'unsaved', 'unsaved']);
    expect(h.states.at(-1)).toBe('saved');
  });

  it('never runs two saves at once; a change during a save is saved after it, against the new uid; queued changes coalesce', async () => {
    const h = harness({ delayMs: 200 });
    h.saver.change('a');
    const first = h.saver.flush();
    await vi.waitFor(() => expect(h.saver.status).toBe('saving'), { interval: 5 });
    h.saver.change('b');
    const second = h.saver.flush();
    await Promise.all([first, second]);
    expect(h.calls).toEqual(['create a', 'update d1 b']);
    expect(h.most()).toBe(1);
    expect(h.saver.status).toBe('saved');
    // two changes before the queue reaches them: the last one is saved, once
    h.saver.change('c');
    const third = h.saver.flush();
    h.saver.change('d');
    await Promise.all([third, h.saver.flush()]);
    expect(h.calls.slice(2)).toEqual(['update d2 d']);
  });

  it('a failed save is reported and tried again by the next flush, nothing lost', async () => {
    const h = harness({ fail: (n) => n === 1 });
    h.saver.change('draft');
    await expect(h.saver.flush()).rejects.toThrow('server down');
    expect(h.saver.status).toBe('failed');
    expect(await h.saver.flush()).toMatchObject({ uid: 'd2', body: 'draft' });
    expect(h.calls).toEqual(['create draft', 'create draft']);
  });

  it("an upload waits for the unsaved text, then replaces the draft; the next save names the upload's draft", async () => {
    const h = harness();
    h.saver.change('text');
    const up = await h.saver.replace(async (d) => ({ uid: `${d.uid}+file`, version: 2, body: d.body }));
    expect(up.uid).toBe('d1+file');
    h.saver.change('more');
    await h.saver.flush();
    expect(h.calls).toEqual(['create text', 'update d1+file more']);
  });

  it('stop drops what was not saved', async () => {
    const h = harness();
    h.saver.change('gone');
    h.saver.stop();
    await new Promise((r) => setTimeout(r, 50));
    expect(h.calls).toEqual([]);
    expect(await h.saver.flush()).toBeNull();
  });

  it('a draft changed or sent in another window meanwhile: what this window holds is saved as a new draft, and both stay', async () => {
    const calls: string[] = [];
    const states: SaveState[] = [];
    const gone = new Error('changed elsewhere');
    const saver = new DraftSaver<string, Draft>(
      {
        create: async (body) => (calls.push(`create ${body}`), { uid: 'fresh', version: 1, body }),
        update: async (old, body) => {
          calls.push(`update ${old.uid} ${body}`);
          throw gone;
        },
        isConflict: (e) => e === gone,
      },
      { uid: 'old', version: 3, body: 'kept elsewhere' },
      (state) => states.push(state),
      5,
    );
    saver.change('typed here');
    expect(await saver.flush()).toMatchObject({ uid: 'fresh', body: 'typed here' });
    expect(calls).toEqual(['update old typed here', 'create typed here']);
    expect(states.at(-1)).toBe('copied');
    // Any other refusal is a failure to show and to try again, never a copy.
    const other = new DraftSaver<string, Draft>(
      {
        create: async () => ({ uid: 'x', version: 1, body: '' }),
        update: async () => Promise.reject(new Error('server down')),
        isConflict: () => false,
      },
      { uid: 'old', version: 1, body: '' },
      () => undefined,
      5,
    );
    other.change('again');
    await expect(other.flush()).rejects.toThrow('server down');
    expect(other.status).toBe('failed');
  });
});
