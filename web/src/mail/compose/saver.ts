// Drafts saved as the user types: a change is saved a moment after the typing stops, one save at a
// time (each answer is a new draft uid and version the next save must name), and anything else that
// replaces the draft (an upload) waits its turn in the same queue.

export interface Saved {
  uid: string;
  version: number;
}

/** `copied`: the draft was changed or sent from another window meanwhile; what this one holds was saved as a new draft. */
export type SaveState = 'unsaved' | 'saving' | 'saved' | 'failed' | 'copied';

export interface SaverIo<B, S extends Saved> {
  /** The first save: a new draft. */
  create(body: B): Promise<S>;
  /** Later saves: the draft replaced (a new uid), guarded by the version it had. */
  update(current: S, body: B): Promise<S>;
  /** An update refused because the draft changed or went elsewhere (another window saved or sent it). */
  isConflict?(e: unknown): boolean;
}

export class DraftSaver<B, S extends Saved> {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private pending: B | null = null;
  private state: SaveState;
  private lastError: unknown = null;

  constructor(
    private readonly io: SaverIo<B, S>,
    private saved: S | null,
    private readonly notify: (state: SaveState, draft: S | null, error: unknown) => void,
    private readonly delayMs = 1500,
  ) {
    this.state = saved ? 'saved' : 'unsaved';
  }

  /** The draft as last saved (null before the first save). */
  get current(): S | null {
    return this.saved;
  }

  get status(): SaveState {
    return this.state;
  }

  /** Records what the form holds now; it is saved once the typing pauses. */
  change(body: B): void {
    this.pending = body;
    this.set('unsaved');
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.flush().catch(() => undefined), this.delayMs);
  }

  /** Saves what is unsaved now (after whatever is running) and answers the draft as saved. */
  flush(): Promise<S | null> {
    this.cancelTimer();
    return this.enqueue(() => this.saveNow());
  }

  /**
   * Runs a step that replaces the saved draft (an upload) as one turn of the queue: the form's
   * unsaved changes are saved first, and nothing (a send's save) can come between the two.
   */
  replace(step: (current: S) => Promise<S>): Promise<S> {
    this.cancelTimer();
    return this.enqueue(async () => {
      const current = await this.saveNow();
      if (!current) throw new Error('the draft is saved before anything is attached to it');
      this.saved = await step(current);
      this.notify(this.state, this.saved, null);
      return this.saved;
    });
  }

  /** The save of a flush, inside the queue. */
  private async saveNow(): Promise<S | null> {
    const body = this.pending;
    if (body === null) return this.saved;
    this.pending = null;
    this.set('saving');
    let copied = false;
    try {
      this.saved = this.saved ? await this.io.update(this.saved, body) : await this.io.create(body);
    } catch (e) {
      if (!(this.saved && this.io.isConflict?.(e))) return this.fail(body, e);
      // Nothing typed here is lost, nothing saved there is overwritten: both drafts stay.
      try {
        this.saved = await this.io.create(body);
        copied = true;
      } catch (again) {
        return this.fail(body, again);
      }
    }
    this.set(this.pending === null ? (copied ? 'copied' : 'saved') : 'unsaved');
    return this.saved;
  }

  private fail(body: B, e: unknown): never {
    this.pending ??= body; // tried again by the next change or flush
    this.lastError = e;
    this.set('failed');
    throw e;
  }

  private cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Stops saving (the draft is discarded or sent); what was not saved yet is dropped. flush() then waits for a save under way. */
  stop(): void {
    this.cancelTimer();
    this.pending = null;
  }

  private enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = this.queue.then(step, step);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private set(state: SaveState): void {
    this.state = state;
    if (state !== 'failed') this.lastError = null;
    this.notify(state, this.saved, this.lastError);
  }
}
