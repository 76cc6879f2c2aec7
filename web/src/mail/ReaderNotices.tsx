import { useEffect, useState } from 'react';
import { api, describeError } from '../shared/api.js';
import { loadsRemote } from './remote.js';
import type { Message, MessageBody } from './types.js';

// What the reading pane asks the reader about a message: whether to load its remote images (for
// this message, or always for a verified sender: Safe Senders) and whether to send the read receipt
// its sender asked for, where the mailbox's receipt settings say ask.

/** Remote images hidden until allowed; a verified sender can be trusted for good (Safe Senders). */
export function RemoteNotice({ message, body, onAllow }: { message: Message; body: MessageBody; onAllow(): void }) {
  const [error, setError] = useState<unknown>(null);
  if (body.safeSender || !loadsRemote(body.html)) return null;
  const always = async () => {
    try {
      const path = `/api/mail/mailboxes/${encodeURIComponent(message.mailboxUid)}`;
      const box = await api<{ version: number; safeSenders: string[] }>(path);
      const safeSenders = [...new Set([...box.safeSenders, message.fromAddress.toLowerCase()])];
      await api(path, { method: 'PUT', body: { safeSenders, version: box.version } });
      onAllow();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div className="notice" role="status">
      Remote images are hidden so the sender cannot see that you opened this message.{' '}
      <button type="button" className="secondary" onClick={onAllow}>
        Show images
      </button>{' '}
      {body.senderVerified && (
        <button type="button" className="secondary" onClick={() => void always()}>
          Always show images from {message.fromAddress}
        </button>
      )}
      {error !== null && <span className="field-error"> {describeError(error)}</span>}
    </div>
  );
}

/** Waits for the send job to decide a receipt that is still open (pending, or owed once read), then offers the choice when it is ask. */
export function ReceiptNotice({ message, body }: { message: Message; body: MessageBody }) {
  const [state, setState] = useState(body.receipt);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (state !== 'pending' && state !== 'not-read') return;
    let tries = 0;
    const t = setInterval(() => {
      if (++tries > 10) return clearInterval(t);
      void api<MessageBody>(`/api/mail/messages/${encodeURIComponent(message.uid)}/body`).then(
        (b) => setState(b.receipt),
        () => undefined,
      );
    }, 2000);
    return () => clearInterval(t);
  }, [state, message.uid]);
  if (state !== 'ask') return null;
  const answer = (send: boolean) =>
    api<{ state: MessageBody['receipt'] }>(`/api/mail/messages/${encodeURIComponent(message.uid)}/receipt`, {
      method: 'POST',
      body: { send },
    }).then((r) => setState(r.state), setError);
  return (
    <div className="notice" role="status">
      {message.fromAddress} asked to be told that you read this message.{' '}
      <button type="button" className="secondary" onClick={() => void answer(true)}>
        Send receipt
      </button>{' '}
      <button type="button" className="secondary" onClick={() => void answer(false)}>
        Don’t send
      </button>
      {error !== null && <span className="field-error"> {describeError(error)}</span>}
    </div>
  );
}
