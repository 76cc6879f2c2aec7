import { useEffect, useState } from 'react';
import { api, describeError, when } from '../shared/api.js';
import type { Message, MessageBody } from './types.js';

/** The text of a body: its plain text, else the text of its sanitized HTML (parsed inert, never inserted as HTML). */
function textOf(body: MessageBody): string {
  if (body.text) return body.text;
  if (body.html) return new DOMParser().parseFromString(body.html, 'text/html').body.textContent ?? '';
  return '';
}

/** The reading pane: the open message's header and body. */
export function Reader({ message }: { message: Message | null }) {
  const [body, setBody] = useState<MessageBody | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    setBody(null);
    setError(null);
    if (!message) return;
    const abort = new AbortController();
    api<MessageBody>(`/api/mail/messages/${encodeURIComponent(message.uid)}/body`, { signal: abort.signal }).then(setBody, (e) => {
      if (!abort.signal.aborted) setError(e);
    });
    return () => abort.abort();
  }, [message?.uid]); // the body is the message's whatever its flags
  if (!message) return <p className="muted">Select a message.</p>;
  const sender = message.from?.name ? `${message.from.name} <${message.fromAddress}>` : message.fromAddress;
  return (
    <article aria-label="Message">
      <h2>{message.subject || '(no subject)'}</h2>
      <p className="muted">
        {sender} · {when(message.date)}
      </p>
      {error !== null && (
        <div className="error" role="alert">
          {describeError(error)}
        </div>
      )}
      {body === null && error === null && <p className="muted">Loading…</p>}
      {body?.encrypted && <p className="notice">This message is encrypted end to end. Open it in a client that holds your key.</p>}
      {body && !body.encrypted && <div className="message-text">{textOf(body)}</div>}
    </article>
  );
}
