// The message list's paging (web/src/mail/pager.ts): the pages a range of rows needs, each read
// once however often it is asked for, rows updated in place, and answers that arrive after the list
// changed under them dropped.
import { describe, expect, it } from 'vitest';
import { Pager } from '../../../web/src/mail/pager.js';

const rowsOf = (page: number, size: number, total: number) =>
  Array.from({ length: Math.max(0, Math.min(size, total - page * size)) }, (_, i) => ({ n: page * size + i }));

describe('Pager', () => {
  it('names the pages a range of rows lies on, none past the end', () => {
    const p = new Pager(100, async () => [], 250);
    expect(p.pagesFor(0, 10)).toEqual([0]);
    expect(p.pagesFor(95, 105)).toEqual([0, 1]);
    expect(p.pagesFor(190, 400)).toEqual([1, 2]);
    expect(p.pagesFor(240, 250)).toEqual([2]);
    expect(new Pager(100, async () => [], 0).pagesFor(0, 20)).toEqual([]);
  });

  it('reads each page once, also when asked for it again while it is on its way', async () => {
    const asked: number[] = [];
    const p = new Pager(100, async (page, size) => (asked.push(page), rowsOf(page, size, 100_000)), 100_000);
    await Promise.all([p.ensure(0, 30), p.ensure(10, 40), p.ensure(90, 130)]);
    await p.ensure(50, 150);
    expect(asked.sort((a, b) => a - b)).toEqual([0, 1]);
    expect(p.row(0)).toEqual({ n: 0 });
    expect(p.row(149)).toEqual({ n: 149 });
    expect(p.row(250)).toBeUndefined();
    await p.ensure(99_990, 100_000);
    expect(asked).toContain(999);
    expect(p.row(99_999)).toEqual({ n: 99_999 });
  });

  it('updates a row in place, and says when it does not hold it', async () => {
    const p = new Pager(10, async (page, size) => rowsOf(page, size, 30), 30);
    await p.ensure(0, 10);
    expect(
      p.update(
        (r) => r.n === 3,
        () => ({ n: -3 }),
      ),
    ).toBe(true);
    expect(p.row(3)).toEqual({ n: -3 });
    expect(
      p.update(
        (r) => r.n === 25,
        () => ({ n: 0 }),
      ),
    ).toBe(false);
  });

  it('drops an answer that arrives after the list was reset, and reads again', async () => {
    let release: (() => void) | undefined;
    let calls = 0;
    const p = new Pager(
      10,
      async (page, size) => {
        calls++;
        if (calls === 1) await new Promise<void>((ok) => (release = ok));
        return rowsOf(page, size, 50).map((r) => ({ n: r.n + calls * 1000 }));
      },
      50,
    );
    const late = p.ensure(0, 5);
    p.reset(40);
    await p.ensure(0, 5);
    release!();
    await late;
    expect(p.total).toBe(40);
    expect(p.row(0)).toEqual({ n: 2000 }); // the second read's row, not the late first one's
  });

  it('shows the rows from before a reset until their page is read again', async () => {
    let round = 0;
    const p = new Pager(10, async (page, size) => rowsOf(page, size, 30).map((r) => ({ n: r.n + round * 1000 })), 30);
    await p.ensure(0, 10);
    round = 1;
    p.reset(30);
    expect(p.row(3)).toEqual({ n: 3 }); // the old row, no blank one
    await p.ensure(0, 10);
    expect(p.row(3)).toEqual({ n: 1003 });
  });

  it('takes its real length when counted after its first page was read, keeping the page', async () => {
    let reads = 0;
    const p = new Pager(10, async (page, size) => (reads++, rowsOf(page, size, 4)), 50); // 50: an upper bound
    await p.ensure(0, 10);
    p.resize(4);
    expect(p.total).toBe(4);
    expect(p.row(3)).toEqual({ n: 3 });
    await p.ensure(0, 10);
    expect(reads).toBe(1);
  });
});
