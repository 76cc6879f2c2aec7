import { useCallback, useState } from 'react';
import type { ComposeStart } from './open.js';
import type { SendFailure } from './send.js';

export interface ComposeState {
  start: ComposeStart;
  /** Why the last send of this draft was refused, when it was. */
  failure: SendFailure | null;
  /** A new compose view each time: the key of the view (a new start never reuses the last one's state). */
  n: number;
}

/** Which compose view is open: begin one (`start`), open a draft again (`reopen`, with a refusal), or none (`close`). */
export function useComposeState() {
  const [compose, setCompose] = useState<ComposeState | null>(null);
  const reopen = useCallback(
    (start: ComposeStart, failure: SendFailure | null) => setCompose((c) => ({ start, failure, n: (c?.n ?? 0) + 1 })),
    [],
  );
  const startCompose = useCallback((start: ComposeStart) => reopen(start, null), [reopen]);
  /** Closes the view; with `n`, only if that view is still the open one (a send finishing late must not close a newer one). */
  const close = useCallback((n?: number) => setCompose((c) => (n === undefined || c?.n === n ? null : c)), []);
  return { compose, reopen, startCompose, close };
}
