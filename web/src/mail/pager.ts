// The rows of a long list read page by page as they come into view (a virtual list shows only the
// rows in the viewport): which pages a range of rows needs, each fetched once at a time, kept while
// the list is the same, and dropped when the list changes under it (a push event, another sort).

export interface PagerState<T> {
  /** Rows known so far by index; a hole is a row not fetched yet. */
  rows: ReadonlyArray<T | undefined>;
  total: number;
}

export class Pager<T> {
  private pages = new Map<number, T[]>();
  /** The pages as they were before the last reset, shown until their page is read again (no blank rows flash). */
  private stale = new Map<number, T[]>();
  private pending = new Map<number, Promise<void>>();
  private generation = 0;

  constructor(
    readonly pageSize: number,
    private readonly fetchPage: (page: number, size: number) => Promise<T[]>,
    public total: number,
  ) {}

  /** The pages rows [start, end) lie on. */
  pagesFor(start: number, end: number): number[] {
    const first = Math.max(0, Math.floor(start / this.pageSize));
    const last = Math.max(first, Math.floor((Math.min(end, this.total) - 1) / this.pageSize));
    const out: number[] = [];
    for (let p = first; p <= last && p * this.pageSize < this.total; p++) out.push(p);
    return out;
  }

  /** The row at index i, or undefined while its page is not here. */
  row(i: number): T | undefined {
    const p = Math.floor(i / this.pageSize);
    return (this.pages.get(p) ?? this.stale.get(p))?.[i % this.pageSize];
  }

  /** Fetches the pages rows [start, end) need that are neither here nor on their way; resolves when all are here. */
  async ensure(start: number, end: number): Promise<void> {
    const generation = this.generation;
    await Promise.all(
      this.pagesFor(start, end).map((p) => {
        if (this.pages.has(p)) return undefined;
        let wait = this.pending.get(p);
        if (!wait) {
          wait = this.fetchPage(p, this.pageSize)
            .then((rows) => {
              if (generation !== this.generation) return;
              this.pages.set(p, rows);
              this.stale.delete(p);
            })
            .finally(() => {
              if (generation === this.generation) this.pending.delete(p);
            });
          this.pending.set(p, wait);
        }
        return wait;
      }),
    );
  }

  /** The index of the first row here that matches, or -1. */
  indexOf(match: (row: T) => boolean): number {
    for (const [page, rows] of this.pages) {
      const i = rows.findIndex(match);
      if (i >= 0) return page * this.pageSize + i;
    }
    return -1;
  }

  /** Replaces one row in place (a flag or read state changed); false when it is not here. */
  update(match: (row: T) => boolean, next: (row: T) => T): boolean {
    for (const rows of this.pages.values()) {
      const i = rows.findIndex(match);
      if (i >= 0) {
        rows[i] = next(rows[i]);
        return true;
      }
    }
    return false;
  }

  /** The list turned out to be `total` rows long (it was counted while its first pages were read): the pages stay. */
  resize(total: number): void {
    this.total = total;
  }

  /**
   * Forgets every page (the list changed): the next ensure reads again; answers still on their way
   * are dropped. Until a page is read again its old rows still show (not ensured: ensure reads it).
   */
  reset(total: number): void {
    this.generation++;
    this.stale = this.pages;
    this.pages = new Map();
    this.pending.clear();
    this.total = total;
  }
}
