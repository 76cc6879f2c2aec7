// Undo send: a send waits a few seconds after the compose view closes, while the status line offers
// Undo (the draft opens again, nothing sent). A refused send opens the draft again with the reason.
import { useCallback, useEffect, useRef, useState } from 'react';
import type { Message } from '../types.js';
import type { ComposeStart } from './open.js';
import { sendDraft, sendFailure, sentSummary, type SendFailure, type SendMode } from './send.js';

export const UNDO_SECONDS = 5;

export interface StatusLine {
  text: string;
  undo?: () => void;
}

/** The page's status line and `send`, which waits UNDO_SECONDS before it sends; `reopen` opens a draft again. */
export function useSending(reopen: (start: ComposeStart, failure: SendFailure | null) => void) {
  const [status, setStatus] = useState<StatusLine | null>(null);
  const waiting = useRef(0);
  // Leaving the page while a send waits would leave the message in Drafts: the browser asks first.
  useEffect(() => {
    const ask = (e: BeforeUnloadEvent) => waiting.current > 0 && e.preventDefault();
    addEventListener('beforeunload', ask);
    return () => removeEventListener('beforeunload', ask);
  }, []);
  const send = useCallback(
    (draft: Message, mode: SendMode) => {
      const what = mode.kind === 'scheduled' ? 'Scheduling' : 'Sending';
      waiting.current++;
      const timer = setTimeout(async () => {
        waiting.current--;
        setStatus({ text: `${what}…` });
        try {
          setStatus({ text: sentSummary(await sendDraft(draft.uid, mode)) });
        } catch (e) {
          setStatus(null);
          reopen({ kind: 'draft', draft }, sendFailure(e));
        }
      }, UNDO_SECONDS * 1000);
      const undo = () => {
        clearTimeout(timer);
        waiting.current--;
        setStatus({ text: 'Not sent: the draft is open again.' });
        reopen({ kind: 'draft', draft }, null);
      };
      setStatus({ text: `${what} “${draft.subject || '(no subject)'}” in ${UNDO_SECONDS} seconds.`, undo });
    },
    [reopen],
  );
  return { status, tell: useCallback((text: string) => setStatus({ text }), []), send };
}
